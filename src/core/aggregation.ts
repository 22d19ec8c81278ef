import { leafHash, nodeHash, verifyInclusion } from './merkle.ts';
import type { OtsOp } from './ots-ops.ts';

/**
 * Aggregation: one proof for a set of files (docs/cli.md, `stamp --aggregate`). The files' digests, in the order the
 * caller gives (the command line sorts them bytewise by path), are the leaves of an RFC 6962 tree
 * (leaf = SHA-256(0x00 ‖ digest), node = SHA-256(0x01 ‖ left ‖ right), RFC 9162 §2.1 for any size);
 * its root is what gets notarized, and each file keeps its path to that root. The hashing and the
 * check of a path are the log's own (merkle.ts); here are the tree of a whole set at once, the shape
 * of a path, and the same path as OpenTimestamps operations.
 */

/**
 * The most files one aggregation holds: a path is then at most 17 hashes, and the tree with every
 * file's path (as hex, in each proof file) takes a few hundred MiB at most to build.
 */
export const AGGREGATION_MAX_SIZE = 100_000;

const HEX_HASH = /^[0-9a-f]{64}$/;

/** Where a file sits in an aggregation: its leaf's index, the number of leaves, its audit path (hex). */
export interface AggregationPath {
  index: number;
  size: number;
  path: string[];
}

/** Input an aggregation cannot be made or checked from: no files, too many, or a malformed path. */
export class AggregationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AggregationError';
  }
}

function checkSize(size: number): void {
  if (!Number.isSafeInteger(size) || size < 1 || size > AGGREGATION_MAX_SIZE)
    throw new AggregationError(`an aggregation holds 1 to ${AGGREGATION_MAX_SIZE} files, not ${size}`);
}

function checkDigest(digest: Uint8Array): void {
  if (digest.length !== 32) throw new AggregationError('a file digest is 32 bytes (SHA-256)');
}

/**
 * The levels of the path of leaf `index` in a tree of `size` leaves, bottom up: at each, the node
 * the leaf is under and whether it has a sibling (a lone last subtree is carried up unpaired, as
 * RFC 6962 splits). Its sibling, when there is one, is the next hash of the path.
 */
function* climb(index: number, size: number): Generator<{ at: number; hasSibling: boolean }> {
  for (let at = index, width = size; width > 1; at = Math.floor(at / 2), width = Math.ceil(width / 2))
    yield { at, hasSibling: (at ^ 1) < width };
}

/** The number of hashes in the path of leaf `index` of a tree of `size` leaves. */
export function pathLength(index: number, size: number): number {
  let length = 0;
  for (const { hasSibling } of climb(index, size)) if (hasSibling) length++;
  return length;
}

/**
 * The tree over `digests` (32 bytes each): its root, and the audit path of any leaf, bottom up, in
 * the order of RFC 9162 §2.1.3.1 PATH. Built level by level, pairing neighbours and carrying a lone
 * last node up unchanged, which gives the same tree as the RFC's split at the largest power of two;
 * the levels are kept (twice as many hashes as leaves), and a path is read from them when asked.
 */
export function aggregationTree(digests: readonly Uint8Array[]): {
  root: Buffer;
  pathOf: (index: number) => Buffer[];
} {
  checkSize(digests.length);
  digests.forEach(checkDigest);
  const levels: Buffer[][] = [digests.map((digest) => leafHash(digest))];
  for (let level = levels[0]!; level.length > 1;) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2)
      next.push(i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!);
    levels.push(next);
    level = next;
  }
  const pathOf = (index: number): Buffer[] => {
    if (!Number.isSafeInteger(index) || index < 0 || index >= digests.length)
      throw new AggregationError('a leaf index outside the tree');
    const path: Buffer[] = [];
    let depth = 0;
    for (const { at, hasSibling } of climb(index, digests.length)) {
      if (hasSibling) path.push(levels[depth]![at ^ 1]!);
      depth++;
    }
    return path;
  };
  return { root: levels.at(-1)![0]!, pathOf };
}

/** Each file's place in the tree over `digests`, as a proof file holds it, and the root. */
export function aggregate(digests: readonly Uint8Array[]): { root: Buffer; places: AggregationPath[] } {
  const { root, pathOf } = aggregationTree(digests);
  return {
    root,
    places: digests.map((_, index) => ({
      index,
      size: digests.length,
      path: pathOf(index).map((hash) => hash.toString('hex')),
    })),
  };
}

/**
 * The `aggregation` part of a proof file when it is well formed: a safe integer index below the size,
 * a size from 1 to the bound, and exactly as many lowercase hex SHA-256 hashes as the leaf's path has.
 * A string saying what is wrong otherwise (the proof then fails closed).
 */
export function parseAggregation(value: unknown): AggregationPath | string {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return 'aggregation is not an object';
  const { index, size, path } = value as Record<string, unknown>;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1 || size > AGGREGATION_MAX_SIZE)
    return `aggregation.size is not a whole number from 1 to ${AGGREGATION_MAX_SIZE}`;
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0 || index >= size)
    return 'aggregation.index is not a whole number below aggregation.size';
  if (!Array.isArray(path) || !path.every((hash) => typeof hash === 'string' && HEX_HASH.test(hash)))
    return 'aggregation.path is not a list of SHA-256 hashes in lowercase hex';
  const expected = pathLength(index, size);
  if (path.length !== expected)
    return `aggregation.path holds ${path.length} hashes; leaf ${index} of ${size} has ${expected}`;
  return { index, size, path: path as string[] };
}

/** Does the file digest lead through `place` to `root`? False for a malformed place too. */
export function leadsTo(digest: Uint8Array, place: AggregationPath, root: Uint8Array): boolean {
  if (digest.length !== 32 || typeof parseAggregation(place) === 'string') return false;
  const path = place.path.map((hash) => Buffer.from(hash, 'hex'));
  return verifyInclusion(place.index, place.size, leafHash(digest), path, root);
}

/**
 * The path as OpenTimestamps operations from the file's digest to the root: prepend 0x00 and SHA-256
 * (the leaf), then per hash of the path, put it on its side, prepend 0x01 and SHA-256 (a node). A
 * reader of the `.ots` file (the reference `ots verify`) thus computes the root from the file itself.
 */
export function aggregationOps(place: AggregationPath): OtsOp[] {
  const problem = parseAggregation(place);
  if (typeof problem === 'string') throw new AggregationError(problem);
  const ops: OtsOp[] = [{ op: 'prepend', arg: Buffer.from([0x00]) }, { op: 'sha256' }];
  let next = 0;
  for (const { at, hasSibling } of climb(place.index, place.size)) {
    if (!hasSibling) continue;
    ops.push(
      { op: at % 2 === 1 ? 'prepend' : 'append', arg: Buffer.from(place.path[next++]!, 'hex') },
      { op: 'prepend', arg: Buffer.from([0x01]) },
      { op: 'sha256' },
    );
  }
  return ops;
}
