import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GateFullError, SerialGate } from './serial-gate.ts';

test('tasks run one at a time, in arrival order', async () => {
  const gate = new SerialGate(10);
  const events: string[] = [];
  let running = 0;
  const task = (name: string) => async () => {
    running++;
    assert.equal(running, 1, `${name} runs alone`);
    events.push(`start ${name}`);
    await new Promise((resolve) => setImmediate(resolve));
    events.push(`end ${name}`);
    running--;
    return name;
  };
  const results = await Promise.all(['a', 'b', 'c'].map((name) => gate.run(task(name))));
  assert.deepEqual(results, ['a', 'b', 'c']);
  assert.deepEqual(events, ['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  assert.equal(gate.waiting, 0);
});

test('a caller beyond maxWaiting is refused at once; the others still run; a failing task frees the gate', async () => {
  const gate = new SerialGate(1);
  const release = Promise.withResolvers<void>();
  const first = gate.run(async () => {
    await release.promise;
    throw new Error('first fails');
  });
  const second = gate.run(async () => 'second');
  await assert.rejects(
    gate.run(async () => 'third'),
    GateFullError,
  );
  assert.equal(gate.waiting, 1);
  release.resolve();
  await assert.rejects(first, /first fails/);
  assert.equal(await second, 'second');
  assert.equal(await gate.run(async () => 'after'), 'after');
});
