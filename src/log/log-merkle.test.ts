import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CompactRange, rangeNodes } from '../core/compact-range.ts';
import { leafHash, verifyConsistency, verifyInclusion } from '../core/merkle.ts';
import {
  consistencyPath,
  getterOf,
  inclusionPath,
  nodeKey,
  parseTileIndexPath,
  tileIndexPath,
  treeRoot,
} from '../core/merkle-tree.ts';
import { parseTilePath } from './log-routes.ts';
import { flip } from './log-test-setup.ts';

/** Builds the stored-node map of a tree the way the sequencer does: append batches, store new nodes. */
function grow(batches: number[][]): { nodes: Map<string, Uint8Array>; leaves: Buffer[] } {
  const nodes = new Map<string, Uint8Array>();
  const leaves: Buffer[] = [];
  for (const batch of batches) {
    // Each batch continues the stored tree's right edge, as `integrate` does.
    const get = getterOf(nodes);
    const edge = rangeNodes(leaves.length).map(({ level, index }) => get(level, index));
    const range = new CompactRange(leaves.length, edge);
    for (const value of batch) {
      const leaf = leafHash(Buffer.from(`entry ${leaves.length} ${value}`));
      range.append(leaf, ({ level, index, hash }) => nodes.set(nodeKey(level, index), hash));
      leaves.push(leaf);
    }
  }
  return { nodes, leaves };
}

describe('Merkle tree math over stored subtrees', () => {
  test('for random append sequences, every inclusion and consistency proof verifies; one flipped bit fails', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat(), { minLength: 1, maxLength: 9 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        (batches, bit) => {
          const { nodes, leaves } = grow(batches);
          const get = getterOf(nodes);
          const n = leaves.length;
          for (let size = 1; size <= n; size++) {
            const root = treeRoot(size, get);
            for (let i = 0; i < size; i++) {
              const proof = inclusionPath(i, size, get);
              assert.ok(verifyInclusion(i, size, leaves[i]!, proof, root));
              assert.ok(!verifyInclusion(i, size, flip(leaves[i]!, bit), proof, root));
              if (proof.length > 0) {
                const tampered = proof.map((h, j) => (j === bit % proof.length ? flip(h, bit) : h));
                assert.ok(!verifyInclusion(i, size, leaves[i]!, tampered, root));
              }
            }
            for (let from = 1; from <= size; from++) {
              const proof = consistencyPath(from, size, get);
              const oldRoot = treeRoot(from, get);
              assert.ok(verifyConsistency(from, size, oldRoot, root, proof));
              assert.ok(!verifyConsistency(from, size, flip(oldRoot, bit), root, proof));
              if (proof.length > 0) {
                const tampered = proof.map((h, j) => (j === bit % proof.length ? flip(h, bit) : h));
                assert.ok(!verifyConsistency(from, size, oldRoot, root, tampered));
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  test('tile paths follow C2SP tlog-tiles and parse back only in canonical form', () => {
    assert.equal(tileIndexPath(0), '000');
    assert.equal(tileIndexPath(67), '067');
    assert.equal(tileIndexPath(1234067), 'x001/x234/067');
    for (const n of [0, 5, 999, 1000, 1234067, 987654321]) {
      assert.equal(parseTileIndexPath(tileIndexPath(n).split('/')), n);
    }
    for (const bad of ['67', 'x067', '000/067', 'x000/067', '1234', 'x01/234']) {
      assert.equal(parseTileIndexPath(bad.split('/')), undefined, bad);
    }
    assert.deepEqual(parseTilePath('0/x001/234.p/5'), { level: 0, index: 1234, width: 5 });
    assert.deepEqual(parseTilePath('entries/000'), { level: 'entries', index: 0, width: undefined });
    for (const bad of ['0/000.p/256', '0/000.p/0', '7/000', 'x/000', '0/000.p/05', 'entries']) {
      assert.equal(parseTilePath(bad), undefined, bad);
    }
  });
});
