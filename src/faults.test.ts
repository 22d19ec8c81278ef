import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import {
  api,
  expectError,
  inclusionChecked,
  loggedProof,
  makeDataDir,
  notarizeBody,
  requireService,
  sampleHash,
  startServer,
  type TestServer,
} from '../test/helper.ts';
import { startTcpProxy, type TcpProxy } from '../test/tcp-proxy.ts';
import { eventually } from '../test/wait.ts';

const POSTGRES_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const skipPostgres = await requireService('PostgreSQL', POSTGRES_URL);

describe('PostgreSQL goes away and comes back', { skip: skipPostgres }, () => {
  let proxy: TcpProxy;
  let server: TestServer;
  const schema = 't_' + randomUUID().replaceAll('-', '');

  before(async () => {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    const target = new URL(POSTGRES_URL);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    const url = new URL(POSTGRES_URL);
    url.port = String(proxy.port);
    url.searchParams.set('options', `-c search_path=${schema}`);
    server = await startServer({ dataDir: makeDataDir(), env: { DATABASE_URL: url.toString() } });
  });
  after(async () => {
    await server.close();
    await proxy.close();
    server.cleanup();
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  });

  test('503 service_unavailable while it is down, no half-written proof, recovery without restart', async () => {
    const before = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(7001), idempotencyKey: 'fault-before' }),
    });
    assert.equal(before.status, 200);

    await proxy.cut();
    const started = Date.now();
    const down = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(7002), idempotencyKey: 'fault-during' }),
    });
    expectError(down, 503, 'service_unavailable');
    assert.ok(down.headers.get('retry-after'));
    assert.ok(!down.text.includes(' at '), 'no stack trace');
    expectError(
      await api(server.baseUrl, `/api/proofs/${before.body.proof.id as string}`),
      503,
      'service_unavailable',
    );
    const health = await api(server.baseUrl, '/health');
    assert.equal(health.status, 503);
    assert.equal(health.body.error.details.database.ok, false);
    assert.equal(health.body.error.details.reason, 'database_unavailable');
    assert.ok(Date.now() - started < 15_000, 'answers come within the connection timeout, not a hang');

    await proxy.restore();
    await eventually(() => api(server.baseUrl, '/health'), {
      what: 'the service recovers',
      until: (health) => health.status === 200,
      timeoutMs: 20_000,
    });
    const read = await api(server.baseUrl, `/api/verify/proofs/${before.body.proof.id as string}`);
    assert.equal(read.body.verified, true);
    // The request that got 503 made nothing; retrying it makes exactly one proof.
    const retried = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(7002), idempotencyKey: 'fault-during' }),
    });
    assert.equal(retried.status, 200);
    const found = await api(server.baseUrl, '/api/proofs/search?idempotencyKey=fault-during');
    assert.equal(found.body.proofs.length, 1);
    // The background loops carried on: the new proof enters the log.
    const report = await inclusionChecked(server.baseUrl, retried.body.proof.id as string);
    assert.equal(report.body.checks.inclusion.status, 'valid', 'the sequencer resumes');
  });
});

describe('the disk fills up under SQLite', () => {
  let server: TestServer;
  before(
    async () => (server = await startServer({ env: { DATABASE_URL: `sqlite:${makeDataDir()}/full.db` } })),
  );
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('503 while the database cannot grow, nothing corrupted, writes resume when space returns', async () => {
    const { db } = server.ctx.database;
    const first = await api(server.baseUrl, '/api/proof/notarize', { method: 'POST', body: notarizeBody() });
    assert.equal(first.status, 200);
    await loggedProof(server.baseUrl, first.body.proof.id as string);
    // SQLite's own limit on the file's size: the same SQLITE_FULL a full disk gives.
    const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]!.page_count;
    await sql.raw(`pragma max_page_count = ${pages}`).execute(db);
    let full = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(7100), label: 'x'.repeat(120), idempotencyKey: 'full-0' }),
    });
    for (let i = 1; full.status === 200 && i < 200; i++) {
      full = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({
          contentHash: sampleHash(7100 + i),
          label: 'x'.repeat(120),
          idempotencyKey: `full-${i}`,
        }),
      });
    }
    expectError(full, 503, 'service_unavailable');
    assert.ok(full.headers.get('retry-after'));

    await sql.raw('pragma max_page_count = 1073741823').execute(db);
    const integrity = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(db);
    assert.equal(integrity.rows.length, 1);
    assert.equal(integrity.rows[0]?.integrity_check, 'ok');
    const after = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(7300), idempotencyKey: 'after-full' }),
    });
    assert.equal(after.status, 200);
    assert.equal(
      (await api(server.baseUrl, `/api/verify/proofs/${first.body.proof.id as string}`)).body.verified,
      true,
    );
  });
});
