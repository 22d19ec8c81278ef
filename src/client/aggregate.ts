import {
  aggregate as aggregateTree,
  aggregationOps,
  AggregationError,
  type AggregationPath,
} from '../core/aggregation.ts';
import { isContentHash, sha256Hex } from '../core/hashing.ts';
import { applyOp, chainTo, readDetachedFile, writeDetachedFile } from '../core/opentimestamps.ts';
import type { NotarizeInput, NotarizeResult, Proof } from './documents.ts';
import type { Evidence, ManifestKey } from './offline.ts';

/**
 * Aggregation in the client (docs/cli.md): one proof for a set of files. The files' digests are the
 * leaves of an RFC 6962 tree (core/aggregation.ts); only its root is sent, notarized once, so the
 * service never learns the file list. Each file then gets a proof file of its own: the shared proof
 * with its evidence, and the file's path to the root under `aggregation`.
 */

export { AggregationError, type AggregationPath } from '../core/aggregation.ts';

/** What `aggregate` asks of a client (createClient's answer has it). */
export interface AggregatingClient {
  baseUrl: string;
  notarize(input: NotarizeInput): Promise<NotarizeResult>;
  evidence(proofId: string, waitMs?: number): Promise<Evidence>;
  getProof(proofId: string): Promise<{ proof: Proof }>;
  keys(): Promise<{ keys: ManifestKey[] }>;
}

export interface AggregateInput {
  /** The files: each a name (its path, as given) and its `sha256:` content hash. */
  files: ReadonlyArray<{ path: string; contentHash: string }>;
  /** The proof's label; `aggregate of <n> files` when not given. */
  label?: string;
  /** More metadata; `aggregate` and `count` are the aggregation's own. */
  metadata?: Record<string, unknown>;
  /** Derived from the root and the label when not given, so a re-run creates no second proof. */
  idempotencyKey?: string;
}

/** A proof file of one file of an aggregation: `hashproof verify` reads it as any other. */
export interface AggregatedProofFile {
  proof: Proof;
  links: { proof: string; verify: string };
  service: string;
  keys: ManifestKey[];
  evidence: Evidence;
  aggregation: AggregationPath;
}

export interface AggregateResult {
  /** The tree's root, as notarized (`sha256:<hex>`). */
  root: string;
  idempotentReplay: boolean;
  proof: Proof;
  /** The files in the tree's order (bytewise by path), each with its place and its proof file. */
  files: Array<{
    path: string;
    contentHash: string;
    aggregation: AggregationPath;
    document: AggregatedProofFile;
  }>;
}

/** The order of the leaves: bytewise by the path as given (UTF-8), whatever the locale. */
const byPathBytes = (a: { path: string }, b: { path: string }) =>
  Buffer.compare(Buffer.from(a.path, 'utf8'), Buffer.from(b.path, 'utf8'));

/** The files sorted as the tree takes them; two files of one path, or a malformed hash, refused. */
export function aggregationOrder<T extends { path: string; contentHash: string }>(files: readonly T[]): T[] {
  const sorted = [...files].sort(byPathBytes);
  for (const [i, file] of sorted.entries()) {
    if (!isContentHash(file.contentHash))
      throw new AggregationError(
        `${JSON.stringify(file.path)}: ${JSON.stringify(file.contentHash)} is not a sha256: content hash`,
      );
    if (i > 0 && sorted[i - 1]!.path === file.path)
      throw new AggregationError(`${JSON.stringify(file.path)} is named twice`);
  }
  return sorted;
}

/** The metadata notarized with the root: the caller's, and `{ aggregate: "rfc6962", count: n }`. */
export function aggregationMetadata(
  count: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  for (const key of ['aggregate', 'count'])
    if (key in extra) throw new AggregationError(`the metadata key ${key} is the aggregation's own`);
  return { ...extra, aggregate: 'rfc6962', count };
}

/**
 * Notarizes the root of the tree over `input.files` (one ordinary notarize request), fetches the
 * proof's offline evidence once, and gives each file its proof file. Throws AggregationError for a
 * set that cannot be aggregated (none, too many, a path twice), HashproofError as any request does.
 */
export async function aggregate(client: AggregatingClient, input: AggregateInput): Promise<AggregateResult> {
  const files = aggregationOrder(input.files);
  const digests = files.map((file) => Buffer.from(file.contentHash.slice('sha256:'.length), 'hex'));
  const tree = aggregateTree(digests);
  const root = 'sha256:' + tree.root.toString('hex');
  const label = input.label ?? `aggregate of ${files.length} files`;
  const result = await client.notarize({
    contentHash: root,
    label,
    metadata: aggregationMetadata(files.length, input.metadata),
    idempotencyKey: input.idempotencyKey ?? 'aggregate-' + sha256Hex(`${root}\n${label}`).slice(0, 40),
  });
  const evidence = await client.evidence(result.proof.id);
  // Once integrated, the proof names its place in the log, which its inclusion proof must then prove.
  const proof =
    evidence.tlogProof === undefined ? result.proof : (await client.getProof(result.proof.id)).proof;
  const receiptKeyId = proof.receipt?.keyId;
  const receiptKey =
    receiptKeyId === undefined ? undefined : (await client.keys()).keys.find((k) => k.keyId === receiptKeyId);
  const shared = {
    proof,
    links: { proof: client.baseUrl + result.links.proof, verify: client.baseUrl + result.links.verify },
    service: client.baseUrl,
    keys: receiptKey ? [receiptKey] : [],
    evidence,
  };
  return {
    root,
    idempotentReplay: result.idempotentReplay,
    proof,
    files: files.map((file, i) => {
      const aggregation = tree.places[i]!;
      return {
        path: file.path,
        contentHash: file.contentHash,
        aggregation,
        document: { ...shared, aggregation },
      };
    }),
  };
}

/**
 * The `.ots` file of one file of an aggregation, from the proof's own (`/api/proofs/{id}/proof.ots`,
 * which starts from the proof's content hash, the tree's root): the file's digest, its path to the
 * root as OpenTimestamps operations, then the proof's. The reference `ots verify` thus reads the
 * file's timestamp from the file itself. Throws when the proof's file does not start from the root
 * this path leads to.
 */
export function aggregatedOts(proofOts: Buffer, fileDigest: Buffer, place: AggregationPath): Buffer {
  const served = readDetachedFile(proofOts);
  const ops = aggregationOps(place);
  const root = ops.reduce((msg, op) => applyOp(op, msg), fileDigest);
  if (!root.equals(served.digest))
    throw new AggregationError("the file's path does not lead to the digest the proof's .ots starts from");
  return writeDetachedFile(fileDigest, chainTo(fileDigest, ops, [served.timestamp]));
}
