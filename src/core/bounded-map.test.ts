import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundedMap } from './bounded-map.ts';

test('a bounded map drops its oldest entry to make room, and never more than that', () => {
  const map = new BoundedMap<string, number>(3);
  map.set('a', 1).set('b', 2).set('c', 3);
  map.set('b', 20); // an existing key replaces its value and drops nothing
  assert.deepEqual(
    [...map],
    [
      ['a', 1],
      ['b', 20],
      ['c', 3],
    ],
  );
  map.set('d', 4);
  assert.deepEqual([...map.keys()], ['b', 'c', 'd']);
  for (let i = 0; i < 100; i++) map.set(`k${i}`, i);
  assert.equal(map.size, 3);
  assert.deepEqual([...map.keys()], ['k97', 'k98', 'k99']);
});
