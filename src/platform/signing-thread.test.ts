import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as stopMoment } from 'node:timers/promises';
import { within } from '../../test/wait.ts';
import { SigningThread } from './signing-thread.ts';

const ed25519 = generateKeyPairSync('ed25519');
const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });

test('signatures made on the signing thread verify, for many requests at once and both key types', async (t) => {
  const thread = new SigningThread();
  t.after(() => thread.close());
  const messages = Array.from({ length: 200 }, (_, i) => Buffer.from(`message ${i}`));
  const [receipts, tokens] = await Promise.all([
    Promise.all(messages.map((m) => thread.sign(null, m, ed25519.privateKey))),
    Promise.all(messages.map((m) => thread.sign('sha256', m, p256.privateKey))),
  ]);
  messages.forEach((message, i) => {
    assert.ok(verify(null, message, ed25519.publicKey, receipts[i] as Buffer), `receipt ${i}`);
    assert.ok(verify('sha256', message, p256.publicKey, tokens[i] as Buffer), `token ${i}`);
    // Each answer is its own message's: it does not verify another one.
    assert.equal(
      verify(null, messages[(i + 1) % 200] as Buffer, ed25519.publicKey, receipts[i] as Buffer),
      false,
    );
  });
});

test('a message that is a view on a larger buffer is signed as its own bytes, and the buffer may change after', async (t) => {
  const thread = new SigningThread();
  t.after(() => thread.close());
  const memory = Buffer.from('before|the message|after');
  const message = memory.subarray(7, 18);
  const signing = thread.sign(null, message, ed25519.privateKey);
  memory.fill(0); // the thread signs the bytes as they were asked for
  assert.ok(verify(null, Buffer.from('the message'), ed25519.publicKey, await signing));
});

test('signatures asked for while a batch is on the thread go over after it, and all are answered', async (t) => {
  const thread = new SigningThread();
  t.after(() => thread.close());
  const asked: { message: Buffer; signature: Promise<Buffer> }[] = [];
  // One request a turn of the event loop: each turn's request finds the previous batch on the thread.
  for (let i = 0; i < 100; i++) {
    const message = Buffer.from(`turn ${i}`);
    asked.push({ message, signature: thread.sign(null, message, ed25519.privateKey) });
    await new Promise((resolve) => setImmediate(resolve));
  }
  for (const { message, signature } of asked)
    assert.ok(verify(null, message, ed25519.publicKey, await signature), message.toString());
});

test('a signature the thread cannot make fails that request only', async (t) => {
  const thread = new SigningThread();
  t.after(() => thread.close());
  const bad = thread.sign('sha256', Buffer.from('x'), ed25519.privateKey); // Ed25519 takes no digest name
  const good = thread.sign(null, Buffer.from('y'), ed25519.privateKey);
  await assert.rejects(bad, /signing failed/);
  assert.ok(verify(null, Buffer.from('y'), ed25519.publicKey, await good));
});

test('once the thread is gone, signing goes on in the calling thread', async () => {
  const thread = new SigningThread();
  await thread.close();
  const signature = await thread.sign(null, Buffer.from('after'), ed25519.privateKey);
  assert.ok(verify(null, Buffer.from('after'), ed25519.publicKey, signature));
});

test('every signature asked for is answered when the thread stops meanwhile', async () => {
  for (let round = 0; round < 20; round++) {
    const thread = new SigningThread();
    const asked = Array.from({ length: 50 }, (_, i) =>
      thread.sign(null, Buffer.from(`m${i}`), ed25519.privateKey),
    );
    // Part of the test: the stop comes at a different moment each round (before the batch crosses,
    // while it is signed, after).
    await stopMoment(round % 4);
    await thread.close();
    const settled = await within(Promise.allSettled(asked), {
      what: `round ${round}: every request answered`,
      timeoutMs: 5_000,
    });
    settled.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') {
        assert.ok(
          verify(null, Buffer.from(`m${i}`), ed25519.publicKey, outcome.value),
          `round ${round}: ${i}`,
        );
      } else {
        assert.match(String(outcome.reason), /signing thread stopped|signing failed/);
      }
    });
  }
});
