import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { consistencyProof, rootHash } from '../../test/merkle-reference.ts';
import { scratchDirs } from '../../test/helper.ts';
import { leafHash } from '../core/merkle.ts';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import {
  defaultStateDir,
  LogCheckError,
  LogMemory,
  LogUncheckedError,
  type ConsistencyProver,
} from './log-memory.ts';

/** Directories of these tests, removed after them. */
const scratch = scratchDirs();

const ORIGIN = 'memory.example/log';
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const VKEY = formatVerifierKey(ORIGIN, publicKey);
const honest = Array.from({ length: 20 }, (_, i) => leafHash(Buffer.from(`entry ${i}`)));
const forked = [
  ...honest.slice(0, 5),
  ...Array.from({ length: 15 }, (_, i) => leafHash(Buffer.from(`other ${i}`))),
];

const note = (leaves: Buffer[], size: number) =>
  signNote(
    formatCheckpoint({ origin: ORIGIN, size, rootHash: rootHash(leaves.slice(0, size)), extensions: [] }),
    ORIGIN,
    privateKey,
    publicKey,
  );
/** A log that answers consistency proofs from its own leaves, and refuses sizes beyond them. */
const proverOf =
  (leaves: Buffer[], size = leaves.length): ConsistencyProver =>
  async (from, to) =>
    to > size ? undefined : consistencyProof(from, leaves.slice(0, to));

test('the first checkpoint is remembered, a larger consistent one replaces it, an older consistent one does not', async () => {
  const memory = new LogMemory(path.join(scratch(), 'nested', 'state'));
  const first = await memory.observe(note(honest, 4), VKEY, proverOf(honest));
  assert.equal(first.growth, 'first');
  assert.equal((await memory.recall(ORIGIN))?.checkpoint.size, 4);
  assert.equal((await memory.observe(note(honest, 4), VKEY, proverOf(honest))).growth, 'same');
  const grown = await memory.observe(note(honest, 9), VKEY, proverOf(honest));
  assert.deepEqual([grown.growth, grown.previous?.size], ['grew', 4]);
  const older = await memory.observe(note(honest, 6), VKEY, proverOf(honest));
  assert.equal(older.growth, 'older');
  assert.equal((await memory.recall(ORIGIN))?.checkpoint.size, 9, 'the larger one stays');

  await memory.monitored(ORIGIN, 9);
  assert.equal((await memory.recall(ORIGIN))?.monitoredSize, 9);
  await memory.observe(note(honest, 12), VKEY, proverOf(honest));
  assert.deepEqual(
    {
      size: (await memory.recall(ORIGIN))?.checkpoint.size,
      monitored: (await memory.recall(ORIGIN))?.monitoredSize,
    },
    { size: 12, monitored: 9 },
    'growth keeps what a monitor checked',
  );

  // One file per log, its owner's only, nothing left over from the atomic writes.
  const files = readdirSync(memory.dir);
  assert.equal(files.length, 1);
  assert.match(files[0]!, /^log-[0-9a-f]{16}\.json$/);
  assert.equal(statSync(path.join(memory.dir, files[0]!)).mode & 0o777, 0o600);
  assert.equal(statSync(memory.dir).mode & 0o777, 0o700);
  assert.equal(JSON.parse(readFileSync(path.join(memory.dir, files[0]!), 'utf8')).origin, ORIGIN);
});

test('a fork, smaller, equal or larger, is refused with both checkpoints named and never remembered', async () => {
  for (const size of [3, 6, 10, 15]) {
    const memory = new LogMemory(scratch());
    await memory.observe(note(honest, 10), VKEY, proverOf(honest));
    const before = readFileSync(path.join(memory.dir, readdirSync(memory.dir)[0]!), 'utf8');
    if (size <= 5) {
      // Within the shared prefix, the forked log's checkpoint is one the honest log can prove it extends
      // (an honest replica lagging behind)…
      assert.equal((await memory.observe(note(forked, size), VKEY, proverOf(honest))).growth, 'older');
    }
    // …but the forked log itself cannot: its tree of 10 entries is another.
    await assert.rejects(memory.observe(note(forked, size), VKEY, proverOf(forked)), (error) => {
      assert.ok(error instanceof LogCheckError && error.kind === 'fork');
      assert.match(error.message, /^log fork detected: memory\.example\/log: the service served /);
      assert.ok(
        error.message.includes(`size ${size}, root ${rootHash(forked.slice(0, size)).toString('base64')}`),
      );
      assert.ok(error.message.includes(`size 10, root ${rootHash(honest.slice(0, 10)).toString('base64')}`));
      return true;
    });
    const after = readFileSync(path.join(memory.dir, readdirSync(memory.dir)[0]!), 'utf8');
    assert.equal(after, before, `size ${size}: the remembered checkpoint stays`);
  }
});

test('no consistency proof (none given, or the request failed) leaves the log unchecked, never a fork, and remembered as it was', async () => {
  const memory = new LogMemory(scratch());
  await memory.observe(note(honest, 10), VKEY, proverOf(honest));
  const file = path.join(memory.dir, readdirSync(memory.dir)[0]!);
  const before = readFileSync(file, 'utf8');
  const refusals: [string, ConsistencyProver, RegExp][] = [
    ['none given', async () => undefined, /\(the log gives none\)$/],
    [
      'a failed request',
      async () => {
        throw new Error('Too many requests');
      },
      /\(Too many requests\)$/,
    ],
  ];
  for (const [name, prove, why] of refusals)
    for (const size of [6, 15]) {
      await assert.rejects(memory.observe(note(honest, size), VKEY, prove), (error) => {
        assert.ok(error instanceof LogUncheckedError, `${name}: ${String(error)}`);
        assert.ok(!(error instanceof LogCheckError));
        assert.match(
          error.message,
          new RegExp(
            `^could not check the log: memory\\.example/log: no consistency proof from size ${Math.min(size, 10)} to ${Math.max(size, 10)} `,
          ),
        );
        assert.match(error.message, why);
        return true;
      });
      assert.equal(readFileSync(file, 'utf8'), before, `${name}, size ${size}`);
    }
  // Two trees of one size need no proof to be told apart: that is a fork.
  await assert.rejects(
    memory.observe(note(forked, 10), VKEY, async () => undefined),
    (error) => {
      assert.ok(error instanceof LogCheckError && error.kind === 'fork');
      return true;
    },
  );
});

test('a checkpoint signed by another key is rejected before anything is compared or remembered', async () => {
  const memory = new LogMemory(scratch());
  const other = generateKeyPairSync('ed25519');
  const forged = signNote(
    formatCheckpoint({ origin: ORIGIN, size: 3, rootHash: rootHash(honest.slice(0, 3)), extensions: [] }),
    ORIGIN,
    other.privateKey,
    other.publicKey,
  );
  await assert.rejects(memory.observe(forged, VKEY, proverOf(honest)), (error) => {
    assert.ok(error instanceof LogCheckError && error.kind === 'checkpoint');
    assert.match(error.message, /^log checkpoint rejected: it does not verify with the log key/);
    return true;
  });
  assert.deepEqual(readdirSync(memory.dir), []);
  writeFileSync(path.join(memory.dir, 'garbage'), '');
  assert.equal(await memory.recall(ORIGIN), undefined);
});

test('the state directory: HASHPROOF_STATE_DIR, else XDG_STATE_HOME/hashproof, else ~/.local/state/hashproof', () => {
  assert.equal(defaultStateDir({ HASHPROOF_STATE_DIR: '/srv/state', XDG_STATE_HOME: '/x' }), '/srv/state');
  assert.equal(defaultStateDir({ XDG_STATE_HOME: '/var/lib/u/.state' }), '/var/lib/u/.state/hashproof');
  assert.equal(
    defaultStateDir({ XDG_STATE_HOME: 'relative' }),
    path.join(os.homedir(), '.local/state/hashproof'),
  );
  assert.equal(defaultStateDir({}), path.join(os.homedir(), '.local/state/hashproof'));
});
