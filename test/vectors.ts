import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The shared conformance vectors (C2SP log written by Tessera). They live in the `shared/` folder beside
 * the repository (SHARED_DIR overrides); a missing folder fails the tests that need it.
 */
export function vectorsDir(name: string): string {
  const candidates = [
    process.env.SHARED_DIR,
    path.resolve(import.meta.dirname, '../../shared'),
    '/work/shared',
  ].filter((c): c is string => c !== undefined);
  for (const base of candidates) {
    const dir = path.join(base, 'vectors', name);
    if (existsSync(dir)) return dir;
  }
  throw new Error(`conformance vectors ${name} not found in ${candidates.join(', ')}; set SHARED_DIR`);
}
