import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Conformance vectors kept in the repository under `test/vectors/` (each folder's README says where it
 * comes from and under which licence): for example `tessera-log`, a C2SP log written by Tessera.
 */
export function vectorsDir(name: string): string {
  const dir = path.join(import.meta.dirname, 'vectors', name);
  if (!existsSync(dir)) throw new Error(`conformance vectors ${name} not found in ${dir}`);
  return dir;
}
