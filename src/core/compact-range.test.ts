import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rootHash } from '../../test/merkle-reference.ts';
import { CompactRange, rangeNodes } from './compact-range.ts';
import { leafHash } from './merkle.ts';

test('the edge of a tree is one complete subtree per bit of its size, largest first, covering it', () => {
  assert.deepEqual(rangeNodes(0), []);
  assert.deepEqual(rangeNodes(1), [{ level: 0, index: 0 }]);
  assert.deepEqual(rangeNodes(6), [
    { level: 2, index: 0 },
    { level: 1, index: 2 },
  ]);
  assert.deepEqual(rangeNodes(300), [
    { level: 8, index: 0 },
    { level: 5, index: 8 },
    { level: 3, index: 36 },
    { level: 2, index: 74 },
  ]);
  for (let size = 0; size < 600; size++) {
    let covered = 0;
    for (const { level, index } of rangeNodes(size)) {
      assert.equal(index * 2 ** level, covered, `contiguous at ${size}`);
      covered += 2 ** level;
    }
    assert.equal(covered, size);
  }
});

test('a range started from any tree and continued leaf by leaf has the RFC 9162 root at every size', () => {
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 6 }), { maxLength: 80 }), fc.nat(), (raw, pick) => {
      const leaves = raw.map((entry) => leafHash(entry));
      const start = pick % (leaves.length + 1);
      // The edge's hashes, as a verifier reads them: each subtree's root.
      const edge = rangeNodes(start).map(({ level, index }) =>
        rootHash(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level)),
      );
      const range = new CompactRange(start, edge);
      assert.deepEqual(Buffer.from(range.root()), rootHash(leaves.slice(0, start)));
      for (let size = start + 1; size <= leaves.length; size++) {
        range.append(leaves[size - 1]!);
        assert.equal(range.size, size);
        assert.deepEqual(Buffer.from(range.root()), rootHash(leaves.slice(0, size)), `size ${size}`);
      }
    }),
    { numRuns: 200 },
  );
  assert.throws(() => new CompactRange(3, []), /3 leaves has 2 edge nodes/);
});
