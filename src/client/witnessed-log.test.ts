import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { cosign, generateCosignerKey } from '../core/cosignature.ts';
import { formatVerifierKey, signNote } from '../core/signed-note.ts';
import { LogCheckError } from './log-memory.ts';
import { witnessPolicy } from './witness-quorum.ts';
import { awaitCosigned } from './witnessed-log.ts';

const log = generateKeyPairSync('ed25519');
const logKey = formatVerifierKey('example.com/log', log.publicKey);
const w1 = generateCosignerKey('witness.example/one');
const w2 = generateCosignerKey('witness.example/two');
const policy = witnessPolicy([w1.vkey, w2.vkey], 2);

/** The log's checkpoint of `size`, with the cosignatures of `keys` (over `over`, its own text by default). */
function checkpoint(size: number, keys = [w1, w2], over?: string): string {
  const text = `example.com/log\n${size}\n${Buffer.alloc(32, size).toString('base64')}\n`;
  const note = signNote(text, 'example.com/log', log.privateKey, log.publicKey);
  return note + keys.map((key) => `${cosign(over ?? text, 1_790_000_000, key)}\n`).join('');
}

/** A log that answers these notes in turn, then the last one again and again; the reads made. */
function served(...notes: string[]) {
  let reads = 0;
  return {
    read: async () => notes[Math.min(reads++, notes.length - 1)]!,
    reads: () => reads,
  };
}

describe('awaitCosigned', () => {
  test('reads again until the checkpoint carries the quorum and holds the proof, telling each wait', async () => {
    const answers = served(checkpoint(5, [w1]), checkpoint(6, []), checkpoint(6), checkpoint(9));
    const waits: string[] = [];
    const result = await awaitCosigned({
      read: answers.read,
      logKey,
      policy,
      waitMs: 60_000,
      minSize: 7,
      onWait: ({ checkpoint, count }) => waits.push(`${checkpoint.size}:${count.cosigned.length}`),
    });
    assert.equal(result.met, true);
    assert.equal(result.last.checkpoint.size, 9, 'size 6 is cosigned but does not hold entry 6');
    assert.deepEqual(waits, ['5:1', '6:0', '6:2']);
    assert.equal(answers.reads(), 4);
  });

  test('gives up within its bound, answering the last checkpoint seen; 0 is one look', async () => {
    const answers = served(checkpoint(5, [w1]));
    const started = Date.now();
    const result = await awaitCosigned({ read: answers.read, logKey, policy, waitMs: 2_000 });
    assert.equal(result.met, false);
    assert.ok(Date.now() - started <= 2_000 + 1_000, 'never sleeps past the bound');
    assert.ok(answers.reads() >= 2);
    assert.equal(result.last.count.cosigned.length, 1);
    const once = served(checkpoint(5, [w1]));
    assert.equal((await awaitCosigned({ read: once.read, logKey, policy, waitMs: 0 })).met, false);
    assert.equal(once.reads(), 1);
  });

  test('a bad line of a required witness, or a checkpoint the log did not sign, ends the wait: LogCheckError', async () => {
    const other = 'example.com/log\n6\n' + Buffer.alloc(32, 1).toString('base64') + '\n';
    const bad = served(checkpoint(5, [w1]), checkpoint(6, [w1]) + `${cosign(other, 1_790_000_000, w2)}\n`);
    await assert.rejects(
      awaitCosigned({ read: bad.read, logKey, policy, waitMs: 60_000 }),
      (error: unknown) =>
        error instanceof LogCheckError &&
        /^log checkpoint rejected: example\.com\/log size 6, .*: Rejected: a cosignature on the checkpoint of size 6 does not verify: witness\.example\/two/.test(
          error.message,
        ),
    );
    const stranger = generateKeyPairSync('ed25519');
    const unsigned = signNote(
      'example.com/log\n7\n' + Buffer.alloc(32).toString('base64') + '\n',
      'example.com/log',
      stranger.privateKey,
      stranger.publicKey,
    );
    await assert.rejects(
      awaitCosigned({ read: served(unsigned).read, logKey, policy, waitMs: 60_000 }),
      /log checkpoint rejected: it does not verify with the log key/,
    );
  });
});
