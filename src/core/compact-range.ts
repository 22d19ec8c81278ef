import { createHash } from 'node:crypto';
import { nodeHash } from './merkle.ts';

/**
 * The right edge of an RFC 6962 Merkle tree: the complete subtrees its leaves [0, size) split into, one
 * per bit set in `size`, largest first. Their hashes are all it takes to compute the root and to go on
 * appending leaves, so a verifier can follow a log of any length in constant memory, and the log
 * integrates new entries by reading only those few stored nodes (`integrate`).
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

/** A complete subtree of a tree and its hash: level `l`, index `i` covers leaves [i·2^l, (i+1)·2^l). */
export interface TreeNode {
  level: number;
  index: number;
  hash: Uint8Array;
}

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

  /**
   * Appends a leaf (its leaf hash): equal subtrees at the edge merge into their parent. `onNode` hears
   * every complete subtree the leaf completes, the leaf itself first, then each parent up the edge.
   */
  append(leafHash: Uint8Array, onNode?: (node: TreeNode) => void): void {
    const position = this.#size;
    let node = { level: 0, hash: leafHash };
    onNode?.({ level: 0, index: position, hash: leafHash });
    for (let last = this.#nodes.at(-1); last !== undefined && last.level === node.level;) {
      this.#nodes.pop();
      node = { level: node.level + 1, hash: nodeHash(last.hash, node.hash) };
      onNode?.({ level: node.level, index: Math.floor(position / 2 ** node.level), hash: node.hash });
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

/** Reads stored subtree hashes, in the order asked; a missing one is an error, never an empty hash. */
export type NodeReader = (
  wanted: readonly { level: number; index: number }[],
) => Promise<readonly Uint8Array[]> | readonly Uint8Array[];

/**
 * Adds `leafHashes` to the tree of `oldSize` leaves whose stored subtrees `readNodes` reads (only the
 * old tree's right edge, one node per bit of `oldSize`, is asked for, in one call). Returns the nodes to
 * store, every complete subtree the new leaves complete, each leaf included, and the new tree's root:
 * the same math a verifier continuing a tree leaf by leaf runs (`CompactRange`).
 */
export async function integrate(
  oldSize: number,
  leafHashes: readonly Uint8Array[],
  readNodes: NodeReader,
): Promise<{ nodes: TreeNode[]; root: Uint8Array }> {
  const edge = rangeNodes(oldSize);
  const range = new CompactRange(oldSize, edge.length === 0 ? [] : await readNodes(edge));
  const nodes: TreeNode[] = [];
  for (const leaf of leafHashes) range.append(leaf, (node) => nodes.push(node));
  return { nodes, root: range.root() };
}
