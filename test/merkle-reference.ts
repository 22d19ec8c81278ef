import { hash } from 'node:crypto';
import { nodeHash } from '../src/core/merkle.ts';

/**
 * The RFC 9162 §2.1 definitions over a whole list of leaf hashes, written as the RFC writes them: the
 * reference the tests check the service's tree math over stored nodes (src/core/merkle-tree.ts) and its
 * proof checks (src/core/merkle.ts) against. Leaves are given by their leaf hashes, in log order.
 */

/** The largest power of two strictly less than n (n ≥ 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** RFC 9162 §2.1.1: MTH of a list of leaf hashes; the empty tree hashes as SHA-256 of nothing. */
export function rootHash(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return hash('sha256', Buffer.alloc(0), 'buffer');
  if (leaves.length === 1) return Buffer.from(leaves[0]!);
  const k = split(leaves.length);
  return nodeHash(rootHash(leaves.slice(0, k)), rootHash(leaves.slice(k)));
}

/** RFC 9162 §2.1.3.1: the inclusion proof of leaf `index` in the tree of the given leaves. */
export function inclusionProof(index: number, leaves: readonly Uint8Array[]): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length)
    throw new RangeError('leaf index outside the tree');
  if (leaves.length === 1) return [];
  const k = split(leaves.length);
  return index < k
    ? [...inclusionProof(index, leaves.slice(0, k)), rootHash(leaves.slice(k))]
    : [...inclusionProof(index - k, leaves.slice(k)), rootHash(leaves.slice(0, k))];
}

/** RFC 9162 §2.1.4.1: the proof that the tree of the first `oldSize` leaves is a prefix of the whole. */
export function consistencyProof(oldSize: number, leaves: readonly Uint8Array[]): Buffer[] {
  if (!Number.isInteger(oldSize) || oldSize < 1 || oldSize > leaves.length)
    throw new RangeError('sizes out of order');
  if (oldSize === leaves.length) return [];
  return subproof(oldSize, leaves, true);
}

function subproof(m: number, leaves: readonly Uint8Array[], isComplete: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return isComplete ? [] : [rootHash(leaves)];
  const k = split(n);
  return m <= k
    ? [...subproof(m, leaves.slice(0, k), isComplete), rootHash(leaves.slice(k))]
    : [...subproof(m - k, leaves.slice(k), false), rootHash(leaves.slice(0, k))];
}
