import { createHash } from 'node:crypto';
import { nodeHash } from './merkle.ts';

/**
 * The right edge of an RFC 6962 Merkle tree: the complete subtrees its leaves [0, size) split into, one
 * per bit set in `size`, largest first. Their hashes are all it takes to compute the root and to go on
 * appending leaves, so a verifier can follow a log of any length in constant memory.
 */

/** The complete subtrees of the tree of `size` leaves, largest (leftmost) first: level `l` covers 2^l leaves. */
export function rangeNodes(size: number): { level: number; index: number }[] {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError('not a tree size');
  const nodes: { level: number; index: number }[] = [];
  let start = 0;
  for (let level = Math.floor(Math.log2(Math.max(size, 1))) + 1; level >= 0; level--) {
    const width = 2 ** level;
    if (size - start >= width) {
      nodes.push({ level, index: start / width });
      start += width;
    }
  }
  return nodes;
}

const EMPTY_ROOT = createHash('sha256').digest();

export class CompactRange {
  /** The edge's subtrees, largest first, with their hashes. */
  readonly #nodes: { level: number; hash: Uint8Array }[];
  #size: number;

  /** The tree of `size` leaves, from the hashes of its `rangeNodes(size)`, in that order. */
  constructor(size: number, hashes: readonly Uint8Array[]) {
    const nodes = rangeNodes(size);
    if (hashes.length !== nodes.length)
      throw new RangeError(`a tree of ${size} leaves has ${nodes.length} edge nodes`);
    this.#nodes = nodes.map(({ level }, i) => ({ level, hash: hashes[i]! }));
    this.#size = size;
  }

  get size(): number {
    return this.#size;
  }

  /** Appends a leaf (its leaf hash): equal subtrees at the edge merge into their parent. */
  append(leafHash: Uint8Array): void {
    let node = { level: 0, hash: leafHash };
    for (let last = this.#nodes.at(-1); last !== undefined && last.level === node.level;) {
      this.#nodes.pop();
      node = { level: node.level + 1, hash: nodeHash(last.hash, node.hash) };
      last = this.#nodes.at(-1);
    }
    this.#nodes.push(node);
    this.#size += 1;
  }

  /** RFC 9162 §2.1.1: the root, the edge's subtrees folded from the right. */
  root(): Uint8Array {
    const nodes = this.#nodes;
    if (nodes.length === 0) return EMPTY_ROOT;
    let root = nodes.at(-1)!.hash;
    for (let i = nodes.length - 2; i >= 0; i--) root = nodeHash(nodes[i]!.hash, root);
    return root;
  }
}
