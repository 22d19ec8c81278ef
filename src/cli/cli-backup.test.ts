import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  api,
  expectError,
  freePort,
  loggedProof,
  notarizeBody,
  requireService,
  sampleHash,
  scratchDirs,
} from '../../test/helper.ts';
import pg from 'pg';
import { startInstance, type Instance } from '../../test/cluster.ts';
import { killGroup, run, serving, start as startProcess } from '../../test/process.ts';
import { Arrivals } from '../../test/wait.ts';
import { CLI } from './cli-test-setup.ts';

const MAIN = path.join(import.meta.dirname, '..', 'main.ts');
const scratch = scratchDirs();
const running: Instance[] = [];
after(() => Promise.all(running.map((instance) => instance.stop('SIGKILL'))));

/** The environment of a service (and of the command run for it) on the embedded database in `dir`. */
const machine = (dir: string) => ({
  DATABASE_URL: `sqlite:${path.join(dir, 'hashproof.db')}`,
  SIGNING_KEYS_DIR: path.join(dir, 'keys'),
  RATE_LIMIT_MAX: '0',
});
const hashproof = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env } });
const start = async (env: Record<string, string>) => {
  const instance = await startInstance(env);
  running.push(instance);
  return instance;
};

/**
 * What `hashproof backup` wrote: the folder and its directories 0700, every file 0600, and backup.json
 * listing each file (and only those) with its path, role, size and SHA-256, the database (or the
 * PostgreSQL note) among them; the keys copied with their times.
 */
function assertListed(out: string, engine: 'sqlite' | 'postgres', keysDir: string): void {
  const manifest = JSON.parse(readFileSync(path.join(out, 'backup.json'), 'utf8'));
  assert.equal(manifest.version, 2);
  assert.equal(manifest.engine, engine);
  const main = engine === 'sqlite' ? 'hashproof.db' : 'postgresql.txt';
  assert.deepEqual(
    manifest.files.filter(
      (file: { role: string }) => file.role === (engine === 'sqlite' ? 'database' : 'note'),
    ),
    [manifest.files.find((file: { path: string }) => file.path === main)],
  );
  const roles = new Set(manifest.files.map((file: { role: string }) => file.role));
  assert.ok(roles.has('key') && roles.has('log-state'), [...roles].join(' '));
  const found: string[] = [];
  for (const entry of readdirSync(out, { recursive: true, withFileTypes: true })) {
    const file = path.join(entry.parentPath, entry.name);
    const mode = statSync(file).mode & 0o777;
    if (entry.isDirectory()) assert.equal(mode, 0o700, file);
    else {
      assert.equal(mode, 0o600, file);
      found.push(path.relative(out, file));
    }
  }
  assert.equal(statSync(out).mode & 0o777, 0o700);
  assert.deepEqual(
    found.filter((file) => file !== 'backup.json' && file !== 'hashproof.dump').sort(),
    manifest.files.map((file: { path: string }) => file.path).sort(),
  );
  // The log key's time is its validFrom: the copy keeps it.
  const logKey = 'log-ed25519.pem';
  assert.equal(
    statSync(path.join(out, 'keys', logKey)).mtime.toISOString(),
    statSync(path.join(keysDir, logKey)).mtime.toISOString(),
  );
  for (const file of manifest.files) {
    const bytes = readFileSync(path.join(out, file.path));
    assert.equal(file.sizeBytes, bytes.length, file.path);
    assert.equal(file.sha256, createHash('sha256').update(bytes).digest('hex'), file.path);
  }
}

test('an online backup of the embedded database and the keys restores on a fresh machine; an older one cannot fork the log', async () => {
  const first = machine(scratch());
  const service = await start(first);
  // Proofs keep being created while the backup is made; each acknowledged one is noted.
  const acked = new Arrivals<string>();
  let creating = true;
  const failures: string[] = [];
  const creator = (async () => {
    for (let n = 0; creating; n++) {
      const res = await api(service.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({ contentHash: sampleHash(90_000 + n), idempotencyKey: `backup-${n}` }),
      });
      if (res.status === 200) acked.add(res.body.proof.id);
      else failures.push(`${res.status} ${res.text}`);
    }
  })();
  await acked.until((ids) => ids.length >= 30, { what: '30 proofs before the backup' });
  const before = [...acked.items];
  const out = path.join(scratch(), 'backup');
  const made = await hashproof(['backup', '--out', out], first);
  assert.equal(made.code, 0, made.stderr);
  const countAtBackup = acked.items.length;
  await acked.until((ids) => ids.length >= countAtBackup + 30, { what: '30 proofs after the backup' });
  creating = false;
  await creator;
  assert.deepEqual(failures, [], 'no request failed while the backup was made');
  await loggedProof(service.baseUrl, acked.items.at(-1)!);
  await service.stop();
  assertListed(out, 'sqlite', first.SIGNING_KEYS_DIR);
  assert.match(made.stdout, /backed up \d+ files/);

  // A fresh machine: the backup restored there serves every proof acknowledged before it, and goes on.
  const fresh = machine(scratch());
  const restored = await hashproof(['restore', '--from', out], fresh);
  assert.equal(restored.code, 0, restored.stderr);
  const second = await start(fresh);
  for (const id of before) {
    const report = await api(second.baseUrl, `/api/verify/proofs/${id}`);
    assert.equal(report.status, 200, `${id}: ${report.text}`);
    assert.equal(report.body.verified, true, id);
  }
  const next = await api(second.baseUrl, '/api/proof/notarize', {
    method: 'POST',
    body: notarizeBody({ contentHash: sampleHash(99_999) }),
  });
  assert.equal(next.status, 200, next.text);
  await loggedProof(second.baseUrl, next.body.proof.id);
  await second.stop();

  // The first machine put back to the backup: its log published more since, so it refuses new proofs.
  const refused = await hashproof(['restore', '--from', out], first);
  assert.equal(refused.code, 2, 'an existing database is only replaced with --force');
  assert.match(refused.stderr, /--force/);
  assert.equal((await hashproof(['restore', '--from', out, '--force'], first)).code, 0);
  // It starts, says it is serving, and answers /health 503: no load balancer sends it traffic.
  const port = await freePort();
  const child = startProcess(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', ...first },
    detached: true,
  });
  after(() => killGroup(child));
  const behind = { baseUrl: `http://127.0.0.1:${port}` };
  await serving(child, behind.baseUrl);
  expectError(
    await api(behind.baseUrl, '/api/proof/notarize', { method: 'POST', body: notarizeBody() }),
    503,
    'service_unavailable',
  );
  const health = await api(behind.baseUrl, '/health');
  assert.equal(health.status, 503);
  assert.ok(JSON.stringify(health.body).includes('log'), health.text);
  for (const id of before.slice(0, 5)) {
    assert.equal((await api(behind.baseUrl, `/api/verify/proofs/${id}`)).body.verified, true);
  }
});

test('a damaged or foreign backup is refused before anything is restored', async () => {
  const target = machine(scratch());
  const notBackup = await hashproof(['restore', '--from', scratch()], target);
  assert.equal(notBackup.code, 2);
  assert.match(notBackup.stderr, /not a backup/);
  assert.equal((await hashproof(['backup'], target)).code, 2);
});

const POSTGRES_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const skipPostgres = await requireService('PostgreSQL', POSTGRES_URL);

test(
  'PostgreSQL: the keys by hashproof backup, the database by pg_dump, both restored on a fresh database',
  { skip: skipPostgres },
  async () => {
    const schema = `t_${randomUUID().replaceAll('-', '')}`;
    const fresh = `restore_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    const urlOf = (database: string | undefined) => {
      const url = new URL(POSTGRES_URL);
      if (database !== undefined) url.pathname = `/${database}`;
      url.searchParams.set('options', `-c search_path=${schema}`);
      return url.toString();
    };
    try {
      const dir = scratch();
      const first = {
        DATABASE_URL: urlOf(undefined),
        SIGNING_KEYS_DIR: path.join(dir, 'keys'),
        RATE_LIMIT_MAX: '0',
      };
      const service = await start(first);
      const ids: string[] = [];
      for (let n = 0; n < 20; n++) {
        const res = await api(service.baseUrl, '/api/proof/notarize', {
          method: 'POST',
          body: notarizeBody({ contentHash: sampleHash(80_000 + n) }),
        });
        assert.equal(res.status, 200, res.text);
        ids.push(res.body.proof.id);
      }
      await loggedProof(service.baseUrl, ids.at(-1)!);
      const out = path.join(scratch(), 'backup');
      const made = await hashproof(['backup', '--out', out], first);
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stdout, /pg_dump/);
      assertListed(out, 'postgres', first.SIGNING_KEYS_DIR);
      // The documented procedure: pg_dump right after, while the service runs.
      const dump = path.join(out, 'hashproof.dump');
      const dumped = await run('pg_dump', [
        '--format=custom',
        '--no-owner',
        '--schema',
        schema,
        '--file',
        dump,
        POSTGRES_URL,
      ]);
      assert.equal(dumped.code, 0, dumped.stderr);
      await service.stop();

      await admin.query(`create database ${fresh}`);
      const second = {
        DATABASE_URL: urlOf(fresh),
        SIGNING_KEYS_DIR: path.join(scratch(), 'keys'),
        RATE_LIMIT_MAX: '0',
      };
      const restoredKeys = await hashproof(['restore', '--from', out], second);
      assert.equal(restoredKeys.code, 0, restoredKeys.stderr);
      assert.match(restoredKeys.stdout, /pg_restore/);
      // The dump sits beside the backup's files, unlisted: restore says it leaves it to pg_restore.
      assert.match(restoredKeys.stdout, /not restored \(not listed in backup\.json\): "hashproof\.dump"/);
      const freshUrl = new URL(POSTGRES_URL);
      freshUrl.pathname = `/${fresh}`;
      // The dump is of the test's schema alone (the test database is shared); a whole-database dump, as
      // an operator makes, carries the label search's extension with it.
      const freshDb = new pg.Client({ connectionString: freshUrl.toString() });
      await freshDb.connect();
      await freshDb.query('create extension if not exists pg_trgm with schema public');
      await freshDb.end();
      const restored = await run('pg_restore', ['--no-owner', '--dbname', freshUrl.toString(), dump]);
      assert.equal(restored.code, 0, restored.stderr);
      const again = await start(second);
      for (const id of ids)
        assert.equal((await api(again.baseUrl, `/api/verify/proofs/${id}`)).body.verified, true, id);
      const next = await api(again.baseUrl, '/api/proof/notarize', { method: 'POST', body: notarizeBody() });
      assert.equal(next.status, 200, next.text);
      await loggedProof(again.baseUrl, next.body.proof.id);
      await again.stop();
    } finally {
      await admin.query(`drop schema if exists ${schema} cascade`);
      await admin.query(`drop database if exists ${fresh} with (force)`);
      await admin.end();
    }
  },
);

test('backup run away from the service names the database it looked for and leaves no folder behind', async () => {
  const elsewhere = scratch();
  const out = path.join(scratch(), 'backup');
  const made = await run(process.execPath, [CLI, 'backup', '--out', out], {
    cwd: elsewhere,
    env: { PATH: process.env.PATH! },
  });
  assert.equal(made.code, 2, made.stderr);
  assert.match(
    made.stderr,
    new RegExp(`^hashproof: no database at ${path.join(elsewhere, 'data', 'hashproof.db')} \\(DATABASE_URL`),
  );
  assert.equal(existsSync(out), false);
});

test('a backup that fails part way leaves nothing: a folder it made goes, one that was there is empty again', async () => {
  const dir = scratch();
  const env = { ...machine(dir), LOG_STATE_DIR: path.join(dir, 'log-state') };
  const keys = await hashproof(['keys', 'init'], env);
  assert.equal(keys.code, 0, keys.stderr);
  // The keys are copied first; then the database cannot be read.
  writeFileSync(path.join(dir, 'hashproof.db'), 'not a database');
  const out = path.join(scratch(), 'backup');
  const failed = await hashproof(['backup', '--out', out], env);
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stderr, /cannot copy the database .*hashproof\.db \(DATABASE_URL\)/);
  assert.equal(existsSync(out), false);
  mkdirSync(out);
  const again = await hashproof(['backup', '--out', out], env);
  assert.equal(again.code, 1, again.stderr);
  assert.deepEqual(readdirSync(out), []);
});
