import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateKeyPairSync, verify } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { sql } from 'kysely';
import { SigningThread } from '../platform/signing-thread.ts';
import { openDatabase } from './index.ts';
import { WAL_SIZE_LIMIT_BYTES } from './node-sqlite-dialect.ts';
import { startCheckpointer } from './sqlite-checkpointer.ts';
import { eventually } from '../../test/wait.ts';

const sizeOf = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;

test('the write-ahead log is copied into the database file by the checkpoint thread, not at commit', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-checkpoint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'service.db');
  const warnings: string[] = [];
  const handle = await openDatabase({ engine: 'sqlite', path: file }, (message) => warnings.push(message));
  const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(handle.db);
  assert.equal(rows[0]?.wal_autocheckpoint, 0, 'the request thread never checkpoints');

  await sql`create table filler (id integer primary key, body text not null)`.execute(handle.db);
  const before = sizeOf(file);
  // About 4 MB of rows, far more than one checkpoint interval's worth of log.
  for (let batch = 0; batch < 20; batch++) {
    await handle.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 100; i++) {
        await sql`insert into filler (body) values (${'x'.repeat(2000)})`.execute(trx);
      }
    });
  }
  // The checkpoint thread says nothing when it has run: the file's size shows it.
  await eventually(() => sizeOf(file) - before, {
    what: 'the database file grows by the checkpointed log',
    until: (grown) => grown >= 4_000_000,
  });
  assert.ok(
    sizeOf(file) - before >= 4_000_000,
    `the database file grew by ${sizeOf(file) - before} bytes; the log was not checkpointed`,
  );
  await handle.close();
  assert.deepEqual(warnings, []);
  assert.equal(sizeOf(`${file}-wal`), 0, 'closing checkpoints everything and removes the log');
});

test('after a burst, the write-ahead log file shrinks back to its size limit once checkpointed', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-checkpoint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'service.db');
  const handle = await openDatabase({ engine: 'sqlite', path: file });
  t.after(() => handle.close());
  const limit = async () =>
    (await sql<{ journal_size_limit: number }>`pragma journal_size_limit`.execute(handle.db)).rows[0]
      ?.journal_size_limit;
  assert.equal(await limit(), WAL_SIZE_LIMIT_BYTES);
  // The same mechanism at a scale a test can afford: a 1 MB limit and a burst of about 4 MB.
  await sql`pragma journal_size_limit = 1048576`.execute(handle.db);
  await sql`create table filler (id integer primary key, body text not null)`.execute(handle.db);
  await handle.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 2000; i++)
      await sql`insert into filler (body) values (${'x'.repeat(2000)})`.execute(trx);
  });
  assert.ok(sizeOf(`${file}-wal`) > 4_000_000, 'the burst is in the log');
  // Each write after a full checkpoint starts the log over, at most 1 MB long.
  await eventually(
    async () => {
      await sql`insert into filler (body) values ('after')`.execute(handle.db);
      return sizeOf(`${file}-wal`);
    },
    { what: 'the log file shrinks to its limit', until: (size) => size <= 1_048_576, intervalMs: 50 },
  );
  assert.ok(sizeOf(`${file}-wal`) <= 1_048_576, `the log file is still ${sizeOf(`${file}-wal`)} bytes`);
  const { rows } = await sql<{ n: number }>`select count(*) as n from filler`.execute(handle.db);
  assert.ok((rows[0]?.n ?? 0) > 2000, 'nothing was lost');
});

test('closing the database waits for the checkpoint thread, even when nothing else keeps the process up', (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-checkpoint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const index = new URL('./index.ts', import.meta.url).href;
  const script = `
    import { openDatabase } from ${JSON.stringify(index)};
    const handle = await openDatabase({ engine: 'sqlite', path: ${JSON.stringify(path.join(dir, 'x.db'))} });
    await handle.close();
    console.log('closed');
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(run.stderr, '');
  assert.equal(run.stdout.trim(), 'closed');
  assert.equal(run.status, 0);
});

test('checkpoints and signatures share one background thread, and each can stop without the other', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-checkpoint-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const signer = new SigningThread();
  t.after(() => signer.close());
  const problems: string[] = [];
  const checkpointer = startCheckpointer(path.join(dir, 'shared.db'), (message) => problems.push(message));
  assert.equal(checkpointer.threadId, signer.threadId);
  assert.notEqual(checkpointer.threadId, threadId, 'not the calling thread');

  // The checkpoints stop; the thread stays for the signer, which still signs there.
  await checkpointer.stop();
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signature = await signer.sign(null, Buffer.from('after the checkpoints'), privateKey);
  assert.ok(verify(null, Buffer.from('after the checkpoints'), publicKey, signature));

  // A new checkpointer joins the same thread while the signer is attached.
  const again = startCheckpointer(path.join(dir, 'shared.db'), (message) => problems.push(message));
  assert.equal(again.threadId, signer.threadId);
  await again.stop();
  assert.deepEqual(problems, []);
});
