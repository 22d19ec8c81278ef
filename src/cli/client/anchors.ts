import { readFile, stat } from 'node:fs/promises';
import type { X509Certificate } from 'node:crypto';
import { certificatesOfPem, writeFileAtomic } from '../../client/client.ts';
import { UsageError } from '../output.ts';

/**
 * The files of `hashproof verify` besides the proof file's own reading (docs/cli.md): the outside
 * authorities' roots, and the proof file replaced with the anchors fetched once the verdict held.
 */

/** The outside authorities' trust roots of --tsa-roots. */
export async function readRoots(file: string): Promise<X509Certificate[]> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch {
    throw new UsageError(`--tsa-roots ${file}: cannot be read`);
  }
  try {
    const roots = certificatesOfPem(pem);
    if (roots.length > 0) return roots;
  } catch {
    // reported below
  }
  throw new UsageError(`--tsa-roots ${file}: not a PEM file of certificates`);
}

/** Replaces the proof file atomically: a reader (or a crash) sees the old file or the new one. */
export async function saveProofFile(file: string, document: object): Promise<void> {
  const { mode } = await stat(file);
  await writeFileAtomic(file, JSON.stringify(document, null, 2) + '\n', mode & 0o777);
}
