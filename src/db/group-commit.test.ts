import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as slowWrite } from 'node:timers/promises';
import { GroupCommitter } from './group-commit.ts';

test('concurrent submissions are written in few batches and each gets its own result', async () => {
  const batches: number[][] = [];
  const committer = new GroupCommitter<number, string>(async (items) => {
    batches.push(items);
    await slowWrite(5); // part of the test: a write that takes a while, as a disk's does
    return items.map((n) => `row ${n}`);
  });
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => committer.submit(i)));
  assert.deepEqual(
    results,
    Array.from({ length: 100 }, (_, i) => `row ${i}`),
  );
  assert.equal(batches.flat().length, 100);
  assert.ok(batches.length <= 2, `expected at most 2 batches, got ${batches.length}`);
});

test('items arriving during a flush wait for the next one, never for a flush already running', async () => {
  const batches: number[][] = [];
  let release: () => void = () => {};
  const flushing = Promise.withResolvers<void>();
  const committer = new GroupCommitter<number, number>(async (items) => {
    batches.push(items);
    if (batches.length === 1) {
      flushing.resolve();
      await new Promise<void>((resolve) => (release = resolve));
    }
    return items;
  });
  const first = committer.submit(1);
  await flushing.promise; // the first flush is running
  const second = committer.submit(2);
  const third = committer.submit(3);
  release();
  assert.deepEqual(await Promise.all([first, second, third]), [1, 2, 3]);
  assert.deepEqual(batches, [[1], [2, 3]]);
});

test('a failed batch fails each of its callers, and later batches still run', async () => {
  let calls = 0;
  const committer = new GroupCommitter<number, number>(async (items) => {
    calls += 1;
    if (calls === 1) throw new Error('disk full');
    return items;
  });
  const failed = await Promise.allSettled([committer.submit(1), committer.submit(2)]);
  assert.deepEqual(
    failed.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  assert.equal(await committer.submit(3), 3);
});

test('batches never exceed the maximum size', async () => {
  const sizes: number[] = [];
  const committer = new GroupCommitter<number, number>(async (items) => {
    sizes.push(items.length);
    return items;
  }, 10);
  await Promise.all(Array.from({ length: 35 }, (_, i) => committer.submit(i)));
  assert.deepEqual(sizes, [10, 10, 10, 5]);
});

test('a group is committed whole, alone when it is larger than a flush, and each item gets its result', async () => {
  const batches: number[][] = [];
  const committer = new GroupCommitter<number, number>(async (items) => {
    batches.push(items);
    return items.map((n) => n * 10);
  }, 4);
  const single = committer.submit(1);
  const group = committer.submitAll([2, 3, 4, 5, 6]);
  const other = committer.submitAll([7, 8]);
  assert.deepEqual(await Promise.all([single, group, other]), [10, [20, 30, 40, 50, 60], [70, 80]]);
  // The group of five never shares a flush it would overfill, and is never split.
  assert.deepEqual(batches, [[1], [2, 3, 4, 5, 6], [7, 8]]);
});
