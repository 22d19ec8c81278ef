import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { scratchDirs } from '../../test/helper.ts';
import { rootHash } from '../../test/merkle-reference.ts';
import { Arrivals } from '../../test/wait.ts';
import { leafHash } from '../core/merkle.ts';
import { CompactRange } from '../core/compact-range.ts';
import { nodeKey } from '../core/merkle-tree.ts';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import { LogGuard, LogInconsistent, type TreeReader } from './log-guard.ts';
import { LogStateFiles } from './log-state.ts';
import type { SignedCheckpoint } from './log-store.ts';

/** Directories of these tests, removed after them. */
const scratch = scratchDirs();

const ORIGIN = 'guard.example/log';
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const VKEY = formatVerifierKey(ORIGIN, publicKey);

function logOf(name: string, size: number): Buffer[] {
  return Array.from({ length: size }, (_, i) => leafHash(Buffer.from(`${name} ${i}`)));
}

function checkpointOf(leaves: Buffer[], size: number, key = { privateKey, publicKey }): SignedCheckpoint {
  const root = rootHash(leaves.slice(0, size));
  const body = formatCheckpoint({ origin: ORIGIN, size, rootHash: root, extensions: [] });
  return {
    treeSize: size,
    rootHash: root,
    checkpoint: signNote(body, ORIGIN, key.privateKey, key.publicKey),
  };
}

/** A database holding the first `head` leaves of a log, its nodes stored as the sequencer stores them. */
function treeOf(leaves: Buffer[], head: number): TreeReader {
  const nodes = new Map<string, Uint8Array>();
  const range = new CompactRange(0, []);
  for (const leaf of leaves.slice(0, head))
    range.append(leaf, ({ level, index, hash }) => nodes.set(nodeKey(level, index), hash));
  return {
    headSize: head,
    nodes: async (wanted) =>
      new Map(wanted.map(({ level, index }) => [nodeKey(level, index), nodes.get(nodeKey(level, index))!])),
    checkpointAt: async (size) => (size <= head ? checkpointOf(leaves, size).checkpoint : null),
  };
}

test('the record only moves forward, whatever order writers sharing the directory finish in', async () => {
  const dir = scratch();
  const files = new LogStateFiles(dir, ORIGIN, VKEY);
  await files.open();
  const leaves = logOf('a', 200);
  await files.write(checkpointOf(leaves, 150));
  await files.write(checkpointOf(leaves, 120));
  assert.equal((await files.latest())?.treeSize, 150);
  // Many writers at once, sizes in a scrambled order.
  const sizes = Array.from({ length: 40 }, (_, i) => 151 + ((i * 17) % 40));
  await Promise.all(
    sizes.map((size) => new LogStateFiles(dir, ORIGIN, VKEY).write(checkpointOf(leaves, size))),
  );
  const latest = await files.latest();
  assert.equal(latest?.treeSize, 190);
  assert.equal(latest?.checkpoint, checkpointOf(leaves, 190).checkpoint);
  assert.ok(
    readdirSync(dir).every((name) => !name.endsWith('.tmp')),
    'no temporary file left',
  );
  // Another log in the same directory keeps its own record.
  const other = new LogStateFiles(
    dir,
    'other.example/log',
    formatVerifierKey('other.example/log', publicKey),
  );
  assert.equal(await other.latest(), undefined);
});

test('the guard passes a database that holds the published tree, and stops at one behind it or holding another', async () => {
  const lines = new Arrivals<string>();
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.add(line) });
  const dir = scratch();
  const guard = new LogGuard({ dir, logger });
  await guard.open(ORIGIN, VKEY);
  const leaves = logOf('a', 30);
  // Nothing recorded yet: the database's newest checkpoint is taken as published.
  const newer = await guard.check(treeOf(leaves, 10));
  assert.ok(newer !== undefined);
  assert.equal(newer.treeSize, 10);
  await guard.record(newer);
  await guard.record(checkpointOf(leaves, 20));
  assert.equal(await guard.check(treeOf(leaves, 20)), undefined);
  assert.equal((await guard.check(treeOf(leaves, 25)))?.treeSize, 25, 'another instance signed 25');
  const problem = () => guard.problem;
  assert.equal(problem(), undefined);

  await assert.rejects(guard.check(treeOf(leaves, 12)), LogInconsistent);
  assert.match(
    problem()?.reason ?? '',
    /holds a log of 12 entries, but the log published a checkpoint of 20/,
  );
  await assert.rejects(guard.check(treeOf(leaves, 12)), LogInconsistent);
  await assert.rejects(guard.check(treeOf(logOf('b', 30), 22)), LogInconsistent);
  assert.match(
    problem()?.reason ?? '',
    /at 20 entries has root .* but the checkpoint the log published .* has root/,
  );
  const refusals = lines.items.filter((line) => line.includes('signs nothing'));
  assert.equal(refusals.length, 2, 'each problem told once');

  assert.equal(await guard.check(treeOf(leaves, 20)), undefined);
  assert.equal(guard.problem, undefined, 'the newer database back: all is well again');
  assert.ok(lines.items.some((line) => line.includes('new proofs are accepted')));

  // A fresh guard (a restart) reads the record: the files hold 20 entries.
  const restarted = new LogGuard({ dir, logger });
  await restarted.open(ORIGIN, VKEY);
  await assert.rejects(restarted.check(treeOf(leaves, 19)), LogInconsistent);
});

test('a record that is not a checkpoint of this log signed with its key stops the log', async () => {
  const dir = scratch();
  const files = new LogStateFiles(dir, ORIGIN, VKEY);
  await files.open();
  const other = generateKeyPairSync('ed25519');
  writeFileSync(path.join(dir, `${files.prefix}5`), checkpointOf(logOf('a', 5), 5, other).checkpoint);
  const guard = new LogGuard({ dir, logger: pino({ level: 'silent' }) });
  await guard.open(ORIGIN, VKEY);
  await assert.rejects(guard.check(treeOf(logOf('a', 9), 9)), LogInconsistent);
  assert.match(
    guard.problem?.reason ?? '',
    /cannot be read: log-checkpoint-[0-9a-f]{16}-5 is not a checkpoint signed/,
  );
  assert.match(
    guard.problem?.action ?? '',
    /move the files log-checkpoint-[0-9a-f]{16}-\* in the log state directory/,
  );
});
