import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClientTurns } from './client-turns.ts';

test('up to the limit a client starts at once; beyond it, in order, each in a later turn than the one that left', async () => {
  const turns = new ClientTurns(2);
  assert.equal(turns.enter('a'), undefined);
  assert.equal(turns.enter('a'), undefined);
  const order: string[] = [];
  const third = turns.enter('a')?.then(() => order.push('third'));
  const fourth = turns.enter('a')?.then(() => order.push('fourth'));
  assert.ok(third && fourth, 'beyond the limit the start waits');
  // Another client is not held up by the first one's queue.
  assert.equal(turns.enter('b'), undefined);
  turns.leave('a');
  await Promise.resolve();
  assert.deepEqual(order, [], 'the place passes on in a later turn, not within this one');
  await new Promise((resolve) => setImmediate(resolve));
  await third;
  assert.deepEqual(order, ['third']);
  turns.leave('a');
  await fourth;
  assert.deepEqual(order, ['third', 'fourth']);
  // Two requests of 'a' are still in hand (the third and fourth took the places), one of 'b'.
  turns.leave('a');
  turns.leave('a');
  assert.equal(turns.activeClients, 1);
  turns.leave('b');
  assert.equal(turns.activeClients, 0, 'nothing is kept for a client once it has no request');
  turns.leave('unknown'); // a stray leave changes nothing
  assert.equal(turns.activeClients, 0);
});
