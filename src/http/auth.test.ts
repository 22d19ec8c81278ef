import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { ADMIN_KEY, adminHeaders, api, startServer, type TestServer } from '../../test/helper.ts';
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
