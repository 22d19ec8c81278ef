import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { generateApiKey } from '../core/secrets.ts';
import { recordTimingSafeEqual } from '../../test/timing-safe-spy.ts';

let server: TestServer;
before(async () => (server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY } })));
after(async () => {
  await server.close();
  server.cleanup();
});

test('the admin key is checked with one timingSafeEqual of two 32-byte digests, whatever was sent', async () => {
  for (const [sent, status] of [
    [ADMIN_KEY, 200],
    [ADMIN_KEY.slice(0, -1) + 'X', 401],
    [ADMIN_KEY.slice(0, 5), 401],
    [ADMIN_KEY + 'x'.repeat(5000), 401],
  ] as const) {
    const { result, calls } = await recordTimingSafeEqual(() =>
      api(server.baseUrl, '/api/accounts', { headers: { 'x-service-admin-key': sent } }),
    );
    assert.equal(result.status, status, sent.slice(0, 30));
    assert.deepEqual(calls, [[32, 32]], `${sent.length} characters sent`);
  }
});

test('an API key is never compared: it is found by its SHA-256, and only that hash is stored', async () => {
  const account = (await api(server.baseUrl, '/api/accounts', { body: {}, headers: adminHeaders })).body
    .account;
  const key = (
    await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, { body: {}, headers: adminHeaders })
  ).body.key as string;
  const rows = await server.ctx.database.db.selectFrom('api_keys').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.key_hash, createHash('sha256').update(key).digest('hex'));
  assert.ok(!JSON.stringify(rows).includes(key.slice(11)), 'the stored row holds no more than the prefix');
  const used = await api(server.baseUrl, '/api/proofs/recent', { headers: { 'x-service-key': key } });
  assert.equal(used.status, 200, 'the key is found by its hash');
});

/** Runs `run` while every query of the service that reads or writes API keys is recorded (SQL, parameters). */
async function recordKeyQueries<T>(run: () => Promise<T>): Promise<{ result: T; queries: string[] }> {
  const executor = server.ctx.database.db.getExecutor();
  const queries: string[] = [];
  const original = executor.executeQuery.bind(executor);
  executor.executeQuery = (query, options) => {
    if (query.sql.includes('api_keys')) queries.push(`${query.sql} (${query.parameters.length} parameters)`);
    return original(query, options);
  };
  try {
    return { result: await run(), queries };
  } finally {
    executor.executeQuery = original;
  }
}

test('an unknown, a revoked and a malformed API key get the same answer, byte for byte, after the same work', async () => {
  const account = (await api(server.baseUrl, '/api/accounts', { body: {}, headers: adminHeaders })).body
    .account;
  const created = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
    body: {},
    headers: adminHeaders,
  });
  const revoked = created.body.key as string;
  const accepted = await api(server.baseUrl, '/api/proofs/recent', { headers: { 'x-service-key': revoked } });
  assert.equal(accepted.status, 200, 'the key worked before it was revoked');
  await server.ctx.accounts.flush(); // its last-use write is not one of the queries recorded below
  await api(server.baseUrl, `/api/api-keys/${created.body.apiKey.id}/revoke`, {
    body: {},
    headers: adminHeaders,
  });
  const refused: [string, string][] = [
    ['unknown', generateApiKey().raw],
    ['revoked', revoked],
    ['malformed: too long', `${revoked}x`],
    ['malformed: not a key', 'not-a-key'],
    ['malformed: empty', ''],
  ];
  // Headers that differ between any two answers, whatever was sent.
  const varying = new Set([
    'date',
    'x-request-id',
    'ratelimit',
    'ratelimit-policy',
    'keep-alive',
    'connection',
  ]);
  for (const [path, init] of [
    ['/api/proof/notarize', { body: notarizeBody() }],
    ['/api/proofs/recent', {}],
  ] as const) {
    const answers: { what: string; answer: string; queries: string[] }[] = [];
    for (const [what, key] of refused) {
      const { result, queries } = await recordKeyQueries(() =>
        api(server.baseUrl, path, { ...init, headers: { 'x-service-key': key } }),
      );
      const headers = [...result.headers].filter(([name]) => !varying.has(name));
      answers.push({ what, answer: JSON.stringify([result.status, result.text, headers]), queries });
    }
    const [first] = answers;
    assert.equal(JSON.parse(first!.answer)[0], 401);
    assert.equal(first!.queries.length, 1, `one lookup: ${first!.queries.join('; ')}`);
    for (const { what, answer, queries } of answers) {
      assert.equal(answer, first!.answer, `${path}, ${what} key`);
      assert.deepEqual(queries, first!.queries, `${path}, ${what} key: the same queries`);
    }
  }
});
