import { createHash } from 'node:crypto';
import { nodeHash } from './merkle.ts';

/**
 * RFC 6962 Merkle tree math over stored subtree hashes. A log stores the hash of every complete,
 * aligned subtree (level `l`, index `i` covers leaves [i·2^l, (i+1)·2^l)); every root, inclusion proof,
 * consistency proof and tile is a function of those nodes. The functions take a node getter, so the
 * nodes a computation needs can be listed first (`nodesNeeded`), fetched in one go, then used. The
 * nodes new leaves complete come from the tree's right edge (`integrate`, compact-range.ts).
 */

export type NodeGetter = (level: number, index: number) => Uint8Array;

const EMPTY_ROOT = createHash('sha256').digest();

/** The largest power of two strictly less than n (n ≥ 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const isPowerOfTwo = (n: number): boolean => n > 0 && (n & (n - 1)) === 0 && n <= 2 ** 30;

/** MTH of leaves [a, b), where [a, b) is a subtree range of the RFC 6962 recursion (a aligned). */
export function rangeHash(a: number, b: number, get: NodeGetter): Uint8Array {
  const size = b - a;
  if (size <= 0) throw new RangeError('empty range');
  if (isPowerOfTwo(size) && a % size === 0) return get(Math.log2(size), a / size);
  const k = split(size);
  return nodeHash(rangeHash(a, a + k, get), rangeHash(a + k, b, get));
}

export function treeRoot(size: number, get: NodeGetter): Uint8Array {
  return size === 0 ? EMPTY_ROOT : rangeHash(0, size, get);
}

/** RFC 9162 §2.1.3.1 PATH(m, D[0:n]). */
export function inclusionPath(index: number, size: number, get: NodeGetter): Uint8Array[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= size)
    throw new RangeError('leaf index outside the tree');
  const path = (a: number, b: number): Uint8Array[] => {
    if (b - a === 1) return [];
    const k = split(b - a);
    return index < a + k
      ? [...path(a, a + k), rangeHash(a + k, b, get)]
      : [...path(a + k, b), rangeHash(a, a + k, get)];
  };
  return path(0, size);
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[0:n]). */
export function consistencyPath(oldSize: number, newSize: number, get: NodeGetter): Uint8Array[] {
  if (!Number.isSafeInteger(oldSize) || oldSize < 1 || oldSize > newSize)
    throw new RangeError('sizes out of order');
  if (oldSize === newSize) return [];
  const sub = (m: number, a: number, b: number, isComplete: boolean): Uint8Array[] => {
    if (m === b - a) return isComplete ? [] : [rangeHash(a, b, get)];
    const k = split(b - a);
    return m <= k
      ? [...sub(m, a, a + k, isComplete), rangeHash(a + k, b, get)]
      : [...sub(m - k, a + k, b, false), rangeHash(a, a + k, get)];
  };
  return sub(oldSize, 0, newSize, true);
}

/** Subtrees that become complete when the tree grows from `oldSize` to `newSize` leaves, lowest first. */
export function newNodes(oldSize: number, newSize: number): { level: number; index: number }[] {
  const nodes: { level: number; index: number }[] = [];
  for (let level = 0; 2 ** level <= newSize; level++) {
    const width = 2 ** level;
    for (let index = Math.floor(oldSize / width); index < Math.floor(newSize / width); index++) {
      nodes.push({ level, index });
    }
  }
  return nodes;
}

export const nodeKey = (level: number, index: number): string => `${level}/${index}`;

/** The nodes `compute` reads, found by running it once with placeholder hashes (the shape does not depend on them). */
export function nodesNeeded(compute: (get: NodeGetter) => unknown): { level: number; index: number }[] {
  const seen = new Map<string, { level: number; index: number }>();
  const placeholder = new Uint8Array(32);
  compute((level, index) => {
    seen.set(nodeKey(level, index), { level, index });
    return placeholder;
  });
  return [...seen.values()];
}

/** A getter over fetched nodes; a missing node is a bug or a damaged store, never silently zero. */
export function getterOf(nodes: ReadonlyMap<string, Uint8Array>): NodeGetter {
  return (level, index) => {
    const hash = nodes.get(nodeKey(level, index));
    if (hash === undefined) throw new Error(`log node ${nodeKey(level, index)} is missing`);
    return hash;
  };
}

/** C2SP tlog-tiles: the path of tile N, e.g. 1234067 → x001/x234/067. */
export function tileIndexPath(index: number): string {
  const digits = String(index).padStart(3 * Math.max(1, Math.ceil(String(index).length / 3)), '0');
  const groups = digits.match(/.{3}/g) ?? ['000'];
  return groups.map((group, i) => (i < groups.length - 1 ? `x${group}` : group)).join('/');
}

/** Parses a tile index path (`x001/x234/067`); undefined when it is not canonical. */
export function parseTileIndexPath(segments: readonly string[]): number | undefined {
  if (segments.length === 0 || segments.length > 6) return undefined;
  let text = '';
  for (const [i, segment] of segments.entries()) {
    const isLast = i === segments.length - 1;
    const match = (isLast ? /^(\d{3})$/ : /^x(\d{3})$/).exec(segment);
    if (match === null) return undefined;
    text += match[1];
  }
  const index = Number(text);
  return Number.isSafeInteger(index) && tileIndexPath(index) === segments.join('/') ? index : undefined;
}
