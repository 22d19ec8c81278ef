import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rootHash } from '../../test/merkle-reference.ts';
import { CompactRange, integrate, rangeNodes, type TreeNode } from './compact-range.ts';
import { leafHash } from './merkle.ts';
import { getterOf, newNodes, nodeKey, treeRoot } from './merkle-tree.ts';

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

/** The entries of the RFC 6962 test data (certificate-transparency's merkle tests) and its roots at sizes 1 to 8. */
const RFC6962_ENTRIES = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
];
const RFC6962_ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

/**
 * A store of subtree hashes grown by `integrate`, batch after batch, as the sequencer grows the log's;
 * it records which nodes each batch asked for.
 */
async function grow(leaves: readonly Uint8Array[], batches: readonly number[]) {
  const stored = new Map<string, Uint8Array>();
  const steps: { oldSize: number; asked: string[]; nodes: TreeNode[]; root: Uint8Array }[] = [];
  let size = 0;
  for (const count of batches) {
    const asked: string[] = [];
    const get = getterOf(stored);
    const { nodes, root } = await integrate(size, leaves.slice(size, size + count), (wanted) => {
      asked.push(...wanted.map((n) => nodeKey(n.level, n.index)));
      return wanted.map((n) => get(n.level, n.index));
    });
    for (const node of nodes) {
      assert.ok(!stored.has(nodeKey(node.level, node.index)), 'a stored node is never written again');
      stored.set(nodeKey(node.level, node.index), node.hash);
    }
    steps.push({ oldSize: size, asked, nodes, root });
    size += count;
  }
  return { stored, steps };
}

test('integrate gives the RFC 6962 roots of its test data, one leaf at a time or all at once', async () => {
  const leaves = RFC6962_ENTRIES.map((hex) => leafHash(Buffer.from(hex, 'hex')));
  const { steps } = await grow(leaves, [0, 1, 1, 1, 1, 1, 1, 1, 1]);
  assert.deepEqual(
    steps.map((step) => Buffer.from(step.root).toString('hex')),
    RFC6962_ROOTS,
  );
  const whole = await grow(leaves, [8]);
  assert.equal(Buffer.from(whole.steps[0]!.root).toString('hex'), RFC6962_ROOTS[8]);
});

test('integrate in batches of any sizes: the root, every complete subtree stored once, only the edge read', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.uint8Array({ maxLength: 4 }), { maxLength: 70 }),
      fc.array(fc.nat({ max: 20 }), { maxLength: 12 }),
      async (raw, cuts) => {
        const leaves = raw.map((entry) => leafHash(entry));
        const batches: number[] = [];
        let left = leaves.length;
        for (const cut of cuts) {
          const count = Math.min(cut, left);
          batches.push(count);
          left -= count;
        }
        batches.push(left);
        const { stored, steps } = await grow(leaves, batches);
        let size = 0;
        for (const [i, step] of steps.entries()) {
          size += batches[i]!;
          // The root is the RFC 9162 root of the leaves so far, and what the log reads agrees with it.
          assert.deepEqual(Buffer.from(step.root), rootHash(leaves.slice(0, size)), `root at ${size}`);
          // It read the old tree's right edge and nothing else, and stored exactly the new subtrees.
          assert.deepEqual(
            step.asked,
            rangeNodes(step.oldSize).map((n) => nodeKey(n.level, n.index)),
          );
          assert.deepEqual(
            step.nodes.map((n) => nodeKey(n.level, n.index)).sort(),
            newNodes(step.oldSize, size)
              .map((n) => nodeKey(n.level, n.index))
              .sort(),
          );
        }
        for (const [key, hash] of stored) {
          const [level, index] = key.split('/').map(Number) as [number, number];
          assert.deepEqual(
            Buffer.from(hash),
            rootHash(leaves.slice(index * 2 ** level, (index + 1) * 2 ** level)),
            key,
          );
        }
        assert.deepEqual(Buffer.from(treeRoot(leaves.length, getterOf(stored))), rootHash(leaves));
      },
    ),
    { numRuns: 200 },
  );
});

test("integrate refuses an edge that is not the old tree's", async () => {
  await assert.rejects(
    integrate(3, [leafHash(Buffer.from('x'))], () => []),
    /3 leaves has 2 edge nodes/,
  );
});
