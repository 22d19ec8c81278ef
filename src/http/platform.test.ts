import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import {
  api,
  expectError,
  isPostgres,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';

describe('rate limit (60 per 60 s by default)', () => {
  let server: TestServer;
  before(
    async () =>
      (server = await startServer({ env: { RATE_LIMIT_MAX: '60', RATE_LIMIT_WINDOW_MS: '60000' } })),
  );
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('the 61st request in a window is 429 with Retry-After and the IETF RateLimit fields', async () => {
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 61; i++) {
      last = await api(
        server.baseUrl,
        i % 2 ? '/api/proofs/recent' : '/api/proof/notarize',
        i % 2 ? {} : { body: notarizeBody() },
      );
      statuses.push(last.status);
      if (i === 0) {
        assert.equal(last.headers.get('ratelimit-policy'), '"default";q=60;w=60');
        assert.match(last.headers.get('ratelimit') ?? '', /^"default";r=59;t=\d+$/);
      }
    }
    assert.deepEqual(statuses.slice(0, 60), Array<number>(60).fill(200));
    assert.ok(last);
    const error = expectError(last, 429, 'rate_limited');
    assert.deepEqual(error.details.limit, 60);
    assert.equal(error.details.windowSeconds, 60);
    const retryAfter = Number(last.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.match(last.headers.get('ratelimit') ?? '', /^"default";r=0;t=\d+$/);
  });

  test('health checks are never limited', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await api(server.baseUrl, '/health')).status, 200);
  });
});

describe('platform behaviour', () => {
  let server: TestServer;
  before(async () => (server = await startServer()));
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('/health reports version, mode and a reachable database', async () => {
    const res = await api(server.baseUrl, '/health');
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.service, 'hashproof');
    assert.equal(res.body.version, '0.2.1');
    assert.equal(res.body.mode, 'demo');
    assert.deepEqual(res.body.database, { engine: isPostgres() ? 'postgres' : 'sqlite', ok: true });
  });

  test('without RATE_LIMIT_MAX the limiter is off entirely (no RateLimit headers)', async () => {
    const res = await api(server.baseUrl, '/api/proofs/recent');
    assert.equal(res.headers.get('ratelimit'), null);
  });

  test('an unknown route is 404 in the envelope', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['POST', '/api/proofs/recent'],
      ['DELETE', '/api/proof/notarize'],
    ] as const) {
      const res = await api(server.baseUrl, path, { method });
      expectError(res, 404, 'not_found');
    }
  });

  test('a malformed URL is 400 in the envelope, not the framework default', async () => {
    expectError(await api(server.baseUrl, '/api/proofs/%zz'), 400, 'invalid_request');
  });

  test('every response carries a request id and the security headers', async () => {
    const res = await api(server.baseUrl, '/api/proofs/recent');
    assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.doesNotMatch(res.headers.get('content-security-policy') ?? '', /upgrade-insecure-requests/);
    assert.ok(res.headers.get('strict-transport-security'));
  });

  test('browsers on other origins may read public endpoints and the payment headers', async () => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://agent.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,payment-signature',
      },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-allow-headers') ?? '', /PAYMENT-SIGNATURE/);
    const get = await api(server.baseUrl, '/api/proofs/recent', {
      headers: { origin: 'https://agent.example' },
    });
    assert.match(get.headers.get('access-control-expose-headers') ?? '', /PAYMENT-REQUIRED/);
  });

  test('the request and secret headers are not written to the logs', async () => {
    const res = await api(server.baseUrl, '/api/proofs/recent', {
      headers: { 'x-service-admin-key': 'admin-secret-123456789', 'x-service-key': 'hp_secretkeyvalue' },
    });
    // The request's access-log line is the last it writes: once it is there, search.
    await server.requestLogged(res);
    const logs = server.logs.join('\n');
    assert.ok(logs.includes('/api/proofs/recent'), 'requests are logged');
    assert.ok(!logs.includes('admin-secret-123456789'));
    assert.ok(!logs.includes('hp_secretkeyvalue'));
  });

  test('an internal failure is a 500 with no stack or SQL, and the service keeps serving', async () => {
    const original = server.ctx.proofs.get.bind(server.ctx.proofs);
    server.ctx.proofs.get = async () => {
      throw new Error('SELECT * FROM proofs: secret internals at /srv/app.ts:12');
    };
    try {
      const res = await api(server.baseUrl, '/api/proofs/proof_01ARZ3NDEKTSV4RRFFQ69G5FAV');
      const error = expectError(res, 500, 'internal_error');
      assert.doesNotMatch(res.text, /SELECT|secret internals|app\.ts/);
      assert.equal(error.details.requestId, res.headers.get('x-request-id'));
    } finally {
      server.ctx.proofs.get = original;
    }
    assert.equal((await api(server.baseUrl, '/health')).status, 200);
  });

  test('a client that stops sending its body does not hold up anyone else', async () => {
    const req = httpRequest(`${server.baseUrl}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '100' },
    });
    req.on('error', () => {});
    req.write('{"contentHash":');
    try {
      const started = Date.now();
      const res = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
      assert.equal(res.status, 200);
      assert.ok(Date.now() - started < 5000);
    } finally {
      req.destroy();
    }
  });
});
