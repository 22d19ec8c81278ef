import { readFile, writeFile } from 'node:fs/promises';
import type { X509Certificate } from 'node:crypto';
import {
  certificatesOfPem,
  checkAnchors,
  type HashproofClient,
  type OfflineCheck,
  type Proof,
  type ProofAnchors,
} from '../client/client.ts';
import { UsageError } from './output.ts';

/**
 * The anchors part of `hashproof verify` (docs/cli.md): with --online, the proof's anchors and its
 * OpenTimestamps file are fetched and saved in the proof file; then the saved anchors are checked
 * offline, the outside tokens against the roots of --tsa-roots.
 */
export async function anchorChecks(
  client: HashproofClient,
  document: { anchors?: ProofAnchors },
  proof: Proof,
  options: { online: boolean; proofFile: string; tsaRoots?: string; logVerifierKey?: string },
): Promise<OfflineCheck[]> {
  const roots = options.tsaRoots === undefined ? undefined : await readRoots(options.tsaRoots);
  let anchors = document.anchors;
  if (options.online) {
    const fetched = await client.anchors(proof.id);
    if (fetched !== undefined) {
      anchors = fetched;
      await saveAnchors(options.proofFile, fetched);
    }
  }
  if (anchors === undefined) {
    return [
      {
        name: 'anchors',
        status: 'unavailable',
        message: options.online
          ? 'No anchored checkpoint holds this proof yet (or the service anchors nothing): try again later'
          : 'None saved in the proof file: hashproof verify --online fetches them once a checkpoint holding the proof is anchored',
      },
    ];
  }
  return checkAnchors(proof, anchors, {
    ...(roots === undefined ? {} : { roots }),
    ...(options.logVerifierKey === undefined ? {} : { logVerifierKey: options.logVerifierKey }),
  });
}

async function readRoots(file: string): Promise<X509Certificate[]> {
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

/** Writes the anchors into the proof file, beside what it holds (a bare proof or a proof file). */
async function saveAnchors(file: string, anchors: ProofAnchors): Promise<void> {
  const document = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  await writeFile(file, JSON.stringify({ ...document, anchors }, null, 2) + '\n');
}
