import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import pino from 'pino';
import { BackgroundLoop, type NextStep } from './background-loop.ts';

/** A broken loop fails its test rather than leaving it waiting for a step that never comes. */
const BOUNDED = { timeout: 10_000 };

/**
 * A loop over a step the test drives: each step waits until the test finishes it with the answer it
 * returns (or an error it throws). Time is node:test's mocked clock: waits pass only when the test
 * moves it, so every assertion is about an order of events, never a race.
 */
function harness(t: TestContext, retry = { firstMs: 1_000, maxMs: 4_000 }) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const logged: { failures: number; retryInMs: number; msg: string }[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) });
  let running = 0;
  let mostAtOnce = 0;
  const starts: ((finish: { answer?: NextStep; error?: Error }) => void)[] = [];
  let stepStarted: (() => void) | undefined;
  const loop = new BackgroundLoop({
    name: 'test loop',
    logger,
    retry,
    step: async () => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      const finish = await new Promise<{ answer?: NextStep; error?: Error }>((resolve) => {
        starts.push(resolve);
        stepStarted?.();
      });
      running -= 1;
      if (finish.error) throw finish.error;
      return finish.answer!;
    },
  });
  /** Resolves once `count` steps have started in all. */
  const started = async (count: number) => {
    while (starts.length < count) await new Promise<void>((resolve) => (stepStarted = resolve));
  };
  /** Lets pending promise callbacks run (the loop's own turns between a step and its wait). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    loop,
    logged,
    starts,
    started,
    settle,
    get mostAtOnce() {
      return mostAtOnce;
    },
    /** Finishes step `n` (1-based) once it has started, and lets the loop go on to its wait. */
    async finish(n: number, finish: { answer?: NextStep; error?: Error }) {
      await started(n);
      starts[n - 1]!(finish);
      await settle();
    },
    tick: (ms: number) => t.mock.timers.tick(ms),
  };
}

test('the first step runs at once; the next after the delay it returned, not sooner', BOUNDED, async (t) => {
  const h = harness(t);
  h.loop.start();
  h.loop.start(); // a second start changes nothing
  await h.finish(1, { answer: 500 });
  h.tick(499);
  await h.settle();
  assert.equal(h.starts.length, 1, 'still waiting');
  h.tick(1);
  await h.finish(2, { answer: 500 });
  await h.loop.stop();
  assert.equal(h.starts.length, 2);
});

test(
  'a nudge wakes a waiting loop at once; nudges during a step make one more step right after it',
  BOUNDED,
  async (t) => {
    const h = harness(t);
    h.loop.start();
    await h.finish(1, { answer: 60_000 });
    h.loop.nudge();
    await h.started(2); // no time has passed

    h.loop.nudge();
    h.loop.nudge();
    h.loop.nudge();
    await h.settle();
    assert.equal(h.starts.length, 2, 'a nudge never starts a step beside the running one');
    await h.finish(2, { answer: 60_000 });
    await h.started(3); // the three nudges: one step, at once
    await h.finish(3, { answer: 60_000 });
    assert.equal(h.starts.length, 3, 'and only one');
    assert.equal(h.mostAtOnce, 1);
    await h.loop.stop();
  },
);

test(
  'a hold: nudges during a step start the next only after it, gathered; without them the loop waits as usual',
  BOUNDED,
  async (t) => {
    const h = harness(t);
    const held = { ms: 250, holdMs: 100 };
    h.loop.start();
    await h.started(1);
    h.loop.nudge();
    await h.finish(1, { answer: held });
    h.tick(99);
    h.loop.nudge();
    await h.settle();
    assert.equal(h.starts.length, 1, 'held, nudged again or not');
    h.tick(1);
    await h.finish(2, { answer: held }); // one step for both nudges
    h.loop.nudge(); // no nudge during step 2: this one wakes the loop at once
    await h.finish(3, { answer: held });
    h.tick(249);
    await h.settle();
    assert.equal(h.starts.length, 3, 'no nudge: the wait is `ms`');
    h.tick(1);
    await h.finish(4, { answer: 60_000 });
    assert.equal(h.starts.length, 4);
    await h.loop.stop();
  },
);

test(
  'a failing step is logged and tried again after a wait that doubles up to its bound, then recovers',
  BOUNDED,
  async (t) => {
    const h = harness(t);
    h.loop.start();
    await h.finish(1, { error: new Error('database away') });
    const waits: number[] = [];
    for (let n = 2; n <= 4; n++) {
      const wait = h.logged.at(-1)!.retryInMs;
      waits.push(wait);
      h.tick(wait - 1);
      await h.settle();
      assert.equal(h.starts.length, n - 1, `not before ${wait} ms`);
      h.tick(1);
      await h.finish(n, { error: new Error('database away') });
    }
    waits.push(h.logged.at(-1)!.retryInMs);
    assert.deepEqual(waits, [1_000, 2_000, 4_000, 4_000]);
    assert.deepEqual(
      h.logged.map((line) => [line.msg, line.failures]),
      [1, 2, 3, 4].map((failures) => ['test loop: step failed, retrying', failures]),
    );

    // Nudges during a failing step, and during the wait after it, do not cut the wait short: new work
    // is no sign that what failed is back.
    h.tick(4_000);
    await h.started(5);
    h.loop.nudge();
    await h.finish(5, { error: new Error('database away') });
    h.loop.nudge();
    h.tick(4_000 - 1);
    await h.settle();
    assert.equal(h.starts.length, 5, 'no step before the retry wait, nudged or not');

    // It recovers: a step that succeeds is followed by the wait it asks for, and the count starts again.
    h.tick(1);
    await h.finish(6, { answer: 60_000 });
    h.loop.nudge();
    await h.finish(7, { error: new Error('once') });
    assert.equal(h.logged.at(-1)!.retryInMs, 1_000);
    await h.loop.stop();
  },
);

test(
  'stop waits for the running step, ends the wait, runs no step after it; a second stop changes nothing',
  BOUNDED,
  async (t) => {
    const h = harness(t);
    h.loop.start();
    await h.started(1);
    h.loop.nudge();
    let stopped = false;
    const stopping = h.loop.stop().then(() => (stopped = true));
    await h.settle();
    assert.equal(stopped, false, 'the step is still running');
    await h.finish(1, { answer: 0 });
    await stopping;
    assert.equal(h.starts.length, 1, 'neither the nudge nor the answer 0 ran another step');
    await h.loop.stop();
    h.loop.nudge();
    h.tick(60_000);
    await h.settle();
    assert.equal(h.starts.length, 1);

    // Started again, it runs; stopped while waiting, even in a hold, it ends at once.
    h.loop.start();
    await h.finish(2, { answer: 60_000 });
    await h.loop.stop();
    h.loop.start();
    await h.started(3);
    h.loop.nudge();
    await h.finish(3, { answer: { ms: 60_000, holdMs: 30_000 } });
    await h.loop.stop();
    assert.equal(h.starts.length, 3);
  },
);

test(
  'started again while stopping, the loop starts anew once the running step finished: one step at a time',
  BOUNDED,
  async (t) => {
    const h = harness(t);
    h.loop.start();
    await h.started(1);
    const stopping = h.loop.stop();
    h.loop.start();
    await h.finish(1, { answer: 0 });
    await stopping;
    await h.finish(2, { answer: 60_000 });
    assert.equal(h.mostAtOnce, 1);
    await h.loop.stop();
  },
);
