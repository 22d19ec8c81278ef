import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  expectError,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';

let server: TestServer;
before(async () => (server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY } })));
after(async () => {
  await server.close();
  server.cleanup();
});

const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  api(server.baseUrl, path, {
    ...init,
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: adminHeaders,
  });

async function newAccount(name = 'Acme Corp') {
  const res = await admin('/api/accounts', { body: { name, ownerLabel: 'ops@acme' } });
  assert.equal(res.status, 201, res.text);
  return res.body.account;
}

async function newKey(accountId: string, body: unknown = {}) {
  const res = await admin(`/api/accounts/${accountId}/api-keys`, { body });
  assert.equal(res.status, 201, res.text);
  return res.body as { apiKey: any; key: string };
}

const ADMIN_ROUTES: [string, string][] = [
  ['GET', '/api/accounts'],
  ['POST', '/api/accounts'],
  ['GET', '/api/accounts/acct_x/api-keys'],
  ['POST', '/api/accounts/acct_x/api-keys'],
  ['GET', '/api/accounts/acct_x/webhooks'],
  ['POST', '/api/accounts/acct_x/webhooks'],
  ['POST', '/api/api-keys/key_x/revoke'],
  ['POST', '/api/webhooks/wh_x/test'],
];

describe('administrator authentication', () => {
  test('every administrator endpoint is 401 without the key, with a wrong key, or with a near miss', async () => {
    for (const [method, path] of ADMIN_ROUTES) {
      for (const headers of [
        {} as Record<string, string>,
        { 'x-service-admin-key': 'wrong' },
        { 'x-service-admin-key': ADMIN_KEY + 'x' },
        { 'x-service-admin-key': ADMIN_KEY.slice(0, -1) },
      ]) {
        const res = await api(server.baseUrl, path, {
          method,
          headers,
          ...(method === 'POST' ? { body: {} } : {}),
        });
        expectError(res, 401, 'unauthorized');
      }
    }
  });

  test('with no SERVICE_ADMIN_KEY configured every administrator call is 401', async () => {
    const open = await startServer();
    try {
      for (const [method, path] of ADMIN_ROUTES) {
        expectError(await api(open.baseUrl, path, { method, headers: adminHeaders }), 401, 'unauthorized');
      }
    } finally {
      await open.close();
      open.cleanup();
    }
  });

  test('administrator paths send no CORS headers', async () => {
    const res = await api(server.baseUrl, '/api/accounts', {
      headers: { ...adminHeaders, origin: 'https://evil.example' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});

describe('accounts', () => {
  test('create and list', async () => {
    const account = await newAccount('Listed');
    assert.match(account.id, /^acct_[0-9A-Z]{26}$/);
    assert.equal(account.name, 'Listed');
    assert.equal(account.ownerLabel, 'ops@acme');
    assert.equal(account.status, 'active');
    assert.equal(account.createdAt, account.updatedAt);
    const list = await admin('/api/accounts');
    assert.ok(list.body.accounts.some((a: { id: string }) => a.id === account.id));
  });

  test('an account needs no fields; unknown or invalid ones are 400', async () => {
    const empty = await api(server.baseUrl, '/api/accounts', { method: 'POST', headers: adminHeaders });
    assert.equal(empty.status, 201, empty.text);
    assert.equal(empty.body.account.name, '');
    expectError(await admin('/api/accounts', { body: { name: 5 } }), 400, 'invalid_request');
    expectError(await admin('/api/accounts', { body: { nickname: 'x' } }), 400, 'invalid_request');
    expectError(await admin('/api/accounts', { body: { name: 'x'.repeat(121) } }), 400, 'invalid_request');
  });

  test('unknown account ids are 404', async () => {
    expectError(await admin('/api/accounts/acct_missing/api-keys'), 404, 'not_found');
    expectError(await admin('/api/accounts/acct_missing/api-keys', { body: {} }), 404, 'not_found');
    expectError(await admin('/api/accounts/acct_missing/webhooks'), 404, 'not_found');
    expectError(await admin('/api/api-keys/key_missing/revoke', { body: {} }), 404, 'not_found');
  });
});

describe('API keys', () => {
  test('the raw key is shown once; listings are redacted', async () => {
    const account = await newAccount();
    const created = await newKey(account.id, { name: 'ci' });
    assert.match(created.key, /^hp_[0-9A-Za-z]{43}$/);
    assert.equal(created.apiKey.keyPrefix, created.key.slice(0, 11));
    assert.deepEqual(created.apiKey.scopes, ['proofs:write']);
    assert.equal(created.apiKey.status, 'active');
    assert.equal(created.apiKey.lastUsedAt, null);
    assert.equal(created.apiKey.revokedAt, null);
    const list = await admin(`/api/accounts/${account.id}/api-keys`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.apiKeys, [created.apiKey]);
    assert.ok(!list.text.includes(created.key));
    assert.ok(!(await admin('/api/accounts')).text.includes(created.key));
  });

  test('unknown scopes are 400 naming the entry', async () => {
    const account = await newAccount();
    const res = await admin(`/api/accounts/${account.id}/api-keys`, {
      body: { scopes: ['proofs:write', 'admin:all'] },
    });
    const error = expectError(res, 400, 'invalid_request');
    assert.ok(
      error.details.errors.some((e: { path: string }) => e.path.startsWith('/scopes/1')),
      res.text,
    );
  });

  test('a key creates proofs for its account, with idempotency scoped to the account', async () => {
    const account = await newAccount();
    const other = await newAccount();
    const { key } = await newKey(account.id);
    const { key: otherKey } = await newKey(other.id);
    const body = notarizeBody({ idempotencyKey: 'shared-key-name' });
    const mine = await api(server.baseUrl, '/api/proof/notarize', {
      body,
      headers: { 'x-service-key': key },
    });
    assert.equal(mine.status, 200, mine.text);
    assert.equal(mine.body.proof.accountId, account.id);
    const theirs = await api(server.baseUrl, '/api/proof/notarize', {
      body,
      headers: { 'x-service-key': otherKey },
    });
    assert.equal(theirs.body.idempotentReplay, false, 'another account has its own key space');
    assert.equal(theirs.body.proof.accountId, other.id);
    const anonymous = await api(server.baseUrl, '/api/proof/notarize', { body });
    assert.equal(anonymous.body.idempotentReplay, false, 'the public scope is separate too');
    assert.equal(anonymous.body.proof.accountId, null);
    const replay = await api(server.baseUrl, '/api/proof/notarize', {
      body,
      headers: { 'x-service-key': key },
    });
    assert.equal(replay.body.idempotentReplay, true);
    assert.equal(replay.body.proof.id, mine.body.proof.id);
    const search = await api(server.baseUrl, `/api/proofs/search?accountId=${account.id}`);
    assert.deepEqual(
      search.body.proofs.map((p: { id: string }) => p.id),
      [mine.body.proof.id],
    );
    const byQ = await api(server.baseUrl, `/api/proofs/search?q=${account.id}`);
    assert.deepEqual(
      byQ.body.proofs.map((p: { id: string }) => p.id),
      [mine.body.proof.id],
    );
  });

  test('lastUsedAt is recorded on use', async () => {
    const account = await newAccount();
    const { key, apiKey } = await newKey(account.id);
    await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody(),
      headers: { 'x-service-key': key },
    });
    await server.ctx.accounts.flush();
    const list = await admin(`/api/accounts/${account.id}/api-keys`);
    const used = list.body.apiKeys.find((k: { id: string }) => k.id === apiKey.id);
    assert.ok(used.lastUsedAt !== null && Math.abs(Date.parse(used.lastUsedAt) - Date.now()) < 10_000);
  });

  test('revoking locks the key out at once; revoking again keeps the first revokedAt', async () => {
    const account = await newAccount();
    const { key, apiKey } = await newKey(account.id);
    assert.equal(
      (
        await api(server.baseUrl, '/api/proof/notarize', {
          body: notarizeBody(),
          headers: { 'x-service-key': key },
        })
      ).status,
      200,
    );
    const revoked = await admin(`/api/api-keys/${apiKey.id}/revoke`, { body: {} });
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.apiKey.status, 'revoked');
    assert.ok(revoked.body.apiKey.revokedAt);
    const refused = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody(),
      headers: { 'x-service-key': key },
    });
    // Refused as a key that never existed would be: the answer does not say it once worked.
    const error = expectError(refused, 401, 'unauthorized');
    assert.equal(error.message, 'The API key in X-Service-Key is not valid');
    assert.deepEqual(error.details, {});
    // A second revocation comes at a later time on the service's clock, so it could tell the first apart.
    const revokedAt = Date.parse(revoked.body.apiKey.revokedAt);
    await eventually(() => Date.now() > revokedAt, { what: 'the clock moves past the first revocation' });
    const again = await admin(`/api/api-keys/${apiKey.id}/revoke`, { body: {} });
    assert.equal(again.status, 200);
    assert.equal(again.body.apiKey.revokedAt, revoked.body.apiKey.revokedAt);
  });

  test('an unknown or malformed key is 401, never a silent fall-back to the public scope', async () => {
    for (const bad of ['hp_' + 'x'.repeat(43), 'not-a-key', '']) {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': bad },
      });
      expectError(res, 401, 'unauthorized');
    }
  });

  test('the raw key never appears in the logs', async () => {
    const account = await newAccount();
    const { key } = await newKey(account.id);
    const made = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody(),
      headers: { 'x-service-key': key },
    });
    // The request's access-log line is the last it writes: once it is there, search.
    await server.requestLogged(made);
    const logs = server.logs.join('\n');
    assert.ok(logs.includes('/api/proof/notarize'));
    assert.ok(!logs.includes(key));
    assert.ok(!logs.includes(ADMIN_KEY));
  });
});

test('a verified API key has its own rate-limit bucket; guessing keys is limited by address', async () => {
  const limited = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, RATE_LIMIT_MAX: '3' } });
  try {
    const account = await api(limited.baseUrl, '/api/accounts', { body: {}, headers: adminHeaders });
    const created = await api(limited.baseUrl, `/api/accounts/${account.body.account.id}/api-keys`, {
      body: {},
      headers: adminHeaders,
    });
    const key = created.body.key as string;
    // The address has used 2 of its 3 requests; the key's bucket is fresh.
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await api(limited.baseUrl, '/api/proofs/recent', { headers: { 'x-service-key': key } })).status,
      );
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const guesses = [];
    for (let i = 0; i < 2; i++) {
      guesses.push(
        (
          await api(limited.baseUrl, '/api/proofs/recent', {
            headers: { 'x-service-key': `hp_${'a'.repeat(42)}${i}` },
          })
        ).status,
      );
    }
    assert.deepEqual(guesses, [401, 429]);
  } finally {
    await limited.close();
    limited.cleanup();
  }
});
