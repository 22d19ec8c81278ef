import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutsideClient } from './outside-http.ts';
import { Pass, PASS_PARALLEL, PASS_REQUESTS, SKIPPED } from './anchor-worker.ts';

/**
 * The bounds of one anchoring pass (docs/deploy.md, the limits of anchoring): at most 32 requests, at most 4
 * at once, all cut when the pass ends. Requests here are promises the test settles itself.
 */

test('one pass makes at most 32 requests, at most 4 at once; the rest are skipped, never made', async () => {
  const stopping = new AbortController();
  const pass = new Pass(new OutsideClient(true), stopping.signal);
  let running = 0;
  let most = 0;
  const releases: (() => void)[] = [];
  const made: number[] = [];
  const results = Array.from({ length: 40 }, (_, index) =>
    pass.run(async () => {
      made.push(index);
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => releases.push(resolve));
      running--;
      return index;
    }),
  );
  // Release the running requests one at a time, as the queue hands each slot on.
  for (let turn = 0; turn < 10_000 && (made.length < PASS_REQUESTS || releases.length > 0); turn++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    releases.shift()?.();
  }
  const settled = await Promise.all(results);
  assert.equal(made.length, PASS_REQUESTS);
  assert.equal(most, PASS_PARALLEL);
  assert.equal(settled.filter((r) => r === SKIPPED).length, 40 - PASS_REQUESTS);
  assert.ok(pass.over);
});

test('a stopped pass makes no further request', async () => {
  const stopping = new AbortController();
  const pass = new Pass(new OutsideClient(true), stopping.signal);
  assert.equal(await pass.run(async () => 'made'), 'made');
  stopping.abort();
  let asked = false;
  assert.equal(
    await pass.run(async () => {
      asked = true;
    }),
    SKIPPED,
  );
  assert.equal(asked, false);
});
