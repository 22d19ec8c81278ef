import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { vectorsDir } from '../../test/vectors.ts';
import {
  aggregate,
  aggregationOps,
  AggregationError,
  AGGREGATION_MAX_SIZE,
  aggregationTree,
  leadsTo,
  parseAggregation,
  pathLength,
} from './aggregation.ts';
import { applyOp } from './ots-ops.ts';

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest();

interface VectorTree {
  size: number;
  digests: string[];
  root: string;
  paths: { index: number; path: string[] }[];
}
const VECTOR = JSON.parse(readFileSync(path.join(vectorsDir('aggregation'), 'vector.json'), 'utf8')) as {
  trees: VectorTree[];
};

test('the roots and paths equal those of golang.org/x/mod/sumdb/tlog over the same leaves', () => {
  assert.deepEqual(
    VECTOR.trees.map((t) => t.size),
    [1, 2, 3, 5, 7, 8, 100],
  );
  for (const tree of VECTOR.trees) {
    const digests = tree.digests.map((hex) => Buffer.from(hex, 'hex'));
    assert.deepEqual(
      digests,
      digests.map((_, i) => sha256(`hashproof aggregation leaf ${i}`)),
    );
    const { root, places } = aggregate(digests);
    assert.equal(root.toString('hex'), tree.root, `root of ${tree.size}`);
    for (const known of tree.paths) {
      assert.deepEqual(places[known.index]!.path, known.path, `path of ${known.index} in ${tree.size}`);
      const place = { index: known.index, size: tree.size, path: known.path };
      assert.ok(leadsTo(digests[known.index]!, place, root));
    }
  }
});

test('every leaf path leads to the root; another digest, index or root does not (property)', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: 1, maxLength: 70 }),
      fc.nat(),
      fc.nat(),
      (raw, pickA, pickB) => {
        const digests = raw.map((bytes) => Buffer.from(bytes));
        const { root, places } = aggregate(digests);
        places.forEach((place, i) => {
          assert.ok(leadsTo(digests[i]!, place, root));
          assert.equal(place.path.length, pathLength(i, digests.length));
          const reached = aggregationOps(place).reduce<Buffer>((msg, op) => applyOp(op, msg), digests[i]!);
          assert.deepEqual(reached, root, 'the OpenTimestamps operations reach the root too');
        });
        const a = pickA % digests.length;
        const changed = Buffer.from(digests[a]!);
        changed[pickB % 32]! ^= 1 << (pickB % 8);
        assert.equal(leadsTo(changed, places[a]!, root), false);
        const b = pickB % digests.length;
        if (!digests[a]!.equals(digests[b]!) && places[a]!.path.length === places[b]!.path.length)
          assert.equal(leadsTo(digests[a]!, { ...places[a]!, index: b }, root), false);
        assert.equal(leadsTo(digests[a]!, places[a]!, sha256(root)), false);
      },
    ),
  );
});

test('a tree of a thousand leaves: each path is the one of its leaf', () => {
  const digests = Array.from({ length: 1000 }, (_, i) => sha256(String(i)));
  const { root, pathOf } = aggregationTree(digests);
  const other = aggregationTree(digests.slice(0, 999)).root;
  assert.notDeepEqual(root, other);
  assert.ok(
    leadsTo(digests[777]!, { index: 777, size: 1000, path: pathOf(777).map((h) => h.toString('hex')) }, root),
  );
});

test('no tree of nothing, of too many files or of digests that are not 32 bytes', () => {
  assert.throws(() => aggregationTree([]), AggregationError);
  assert.throws(() => aggregationTree([Buffer.alloc(31)]), AggregationError);
  assert.throws(
    () => aggregationTree(new Array(AGGREGATION_MAX_SIZE + 1).fill(Buffer.alloc(32))),
    AggregationError,
  );
});

test('a malformed aggregation part is refused, naming what is wrong', () => {
  const good = aggregate([sha256('a'), sha256('b'), sha256('c')]).places[2]!;
  assert.deepEqual(parseAggregation(good), good);
  const cases: [unknown, RegExp][] = [
    [null, /not an object/],
    [[], /not an object/],
    [{ ...good, size: 0 }, /size/],
    [{ ...good, size: AGGREGATION_MAX_SIZE + 1 }, /size/],
    [{ ...good, size: '3' }, /size/],
    [{ ...good, index: 3 }, /index/],
    [{ ...good, index: -1 }, /index/],
    [{ ...good, index: 1.5 }, /index/],
    [{ ...good, path: 'ab' }, /path/],
    [{ ...good, path: [good.path[0]!.toUpperCase()] }, /hex/],
    [{ ...good, path: ['00'] }, /hex/],
    [{ ...good, path: [...good.path, good.path[0]] }, /holds 2 hashes; leaf 2 of 3 has 1/],
    [{ ...good, path: [] }, /holds 0 hashes/],
  ];
  for (const [value, message] of cases) {
    const problem = parseAggregation(value);
    assert.equal(typeof problem, 'string', JSON.stringify(value));
    assert.match(problem as string, message);
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      assert.equal(leadsTo(sha256('c'), value as never, Buffer.alloc(32)), false);
  }
  assert.throws(() => aggregationOps({ ...good, index: 5 }), AggregationError);
});
