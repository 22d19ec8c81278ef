import assert from 'node:assert/strict';
import { fstatSync, fsync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Kysely, sql } from 'kysely';
import { Arrivals } from '../../test/wait.ts';
import { isDatabaseUnavailable } from './errors.ts';
import { createNodeSqliteDialect, openSqliteFile, type Fsync } from './node-sqlite-dialect.ts';

interface Table {
  items: { id: number; name: string };
}

/** A real database file whose flushes are real fsyncs, held until the test releases them. */
function open(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-dialect-'));
  const file = path.join(dir, 'test.db');
  const flushed: string[] = [];
  const held = new Arrivals<() => void>();
  let hold = false;
  const fsyncWatched: Fsync = (fd) =>
    new Promise<void>((resolve, reject) => {
      const run = () =>
        fsync(fd, (error) => {
          if (error) return reject(error);
          flushed.push(fstatSync(fd).isDirectory() ? 'directory' : 'wal');
          resolve();
        });
      if (hold) held.add(run);
      else run();
    });
  const db = new Kysely<Table>({
    dialect: createNodeSqliteDialect(openSqliteFile(file), { file, fsync: fsyncWatched }),
  });
  t.after(() => {
    void db.destroy().then(() => rmSync(dir, { recursive: true, force: true }));
  });
  return {
    db,
    flushed,
    hold: (on: boolean) => (hold = on),
    /** Resolves once a flush has been asked for and is being held. */
    flushHeld: () => held.until((runs) => runs.length > 0, { what: 'a flush is asked for' }),
    release: () => held.items.splice(0).forEach((run) => run()),
  };
}

test('commits run without waiting for the disk in SQLite and are flushed by the driver instead', async (t) => {
  const { db, flushed } = open(t);
  const { rows } = await sql<{ synchronous: number }>`pragma synchronous`.execute(db);
  assert.equal(rows[0]?.synchronous, 1); // NORMAL
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
  assert.deepEqual(flushed, ['wal', 'directory'], 'the first write also flushes the directory');

  flushed.length = 0;
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('items').values({ id: 1, name: 'a' }).execute();
    await trx.insertInto('items').values({ id: 2, name: 'b' }).execute();
    assert.deepEqual(flushed, [], 'nothing is flushed inside a transaction');
  });
  assert.deepEqual(flushed, ['wal'], 'one flush per commit');

  flushed.length = 0;
  await db.insertInto('items').values({ id: 3, name: 'c' }).execute();
  assert.deepEqual(flushed, ['wal'], 'a write outside a transaction is flushed');

  flushed.length = 0;
  assert.equal((await db.selectFrom('items').selectAll().execute()).length, 3);
  assert.deepEqual(flushed, [], 'a read is not');
});

test('a transaction is reported done only after its flush, and no query reads it before', async (t) => {
  const { db, hold, flushHeld, release } = open(t);
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
  hold(true);
  let committed = false;
  const writing = db
    .transaction()
    .execute((trx) => trx.insertInto('items').values({ id: 1, name: 'a' }).execute())
    .then(() => (committed = true));
  let read: number | undefined;
  const reading = db
    .selectFrom('items')
    .selectAll()
    .execute()
    .then((rows) => (read = rows.length));
  // The commit has gone through and asked for its flush; one turn of the event loop later, anything
  // that did not wait for the flush (the commit's caller, the read behind it) would have finished.
  await flushHeld();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(committed, false, 'the commit waits for its flush');
  assert.equal(read, undefined, 'a read waits for the flush of the commit before it');
  hold(false);
  release();
  await Promise.all([writing, reading]);
  assert.equal(committed, true);
  assert.equal(read, 1);
});

test('a failed flush fails the commit it covers', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-dialect-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'test.db');
  let fail = false;
  const db = new Kysely<Table>({
    dialect: createNodeSqliteDialect(openSqliteFile(file), {
      file,
      fsync: (fd) =>
        fail
          ? Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }))
          : new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve()))),
    }),
  });
  t.after(() => db.destroy());
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
  fail = true;
  await assert.rejects(
    db.transaction().execute((trx) => trx.insertInto('items').values({ id: 1, name: 'a' }).execute()),
    (error) => /EIO/.test(String(error)) && isDatabaseUnavailable(error),
  );
});
