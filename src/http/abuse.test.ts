import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  expectError,
  notarizeBody,
  startServer,
  type ApiResponse,
  type TestServer,
} from '../../test/helper.ts';
import { rawRequest } from '../../test/raw-http.ts';

const LIMIT = 20;

/** `count` requests sent at once; the statuses in the order they were sent. */
async function burst(
  server: TestServer,
  count: number,
  headers: Record<string, string>,
): Promise<ApiResponse[]> {
  return Promise.all(
    Array.from({ length: count }, () => api(server.baseUrl, '/api/proofs/recent', { headers })),
  );
}

function assertExactlyLimited(responses: ApiResponse[], what: string): void {
  const ok = responses.filter((r) => r.status === 200);
  const limited = responses.filter((r) => r.status === 429);
  assert.equal(ok.length, LIMIT, `${what}: ${ok.length} answered 200`);
  assert.equal(limited.length, responses.length - LIMIT, `${what}: every other request is 429`);
  for (const res of limited) {
    expectError(res, 429, 'rate_limited');
    const retryAfter = Number(res.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${retryAfter}`);
    assert.match(res.headers.get('ratelimit') ?? '', /^"default";r=0;t=\d+$/);
  }
}

describe(`a burst of 100 concurrent requests against a limit of ${LIMIT}`, () => {
  let server: TestServer;
  const keys: string[] = [];
  before(async () => {
    server = await startServer({
      env: {
        SERVICE_ADMIN_KEY: ADMIN_KEY,
        RATE_LIMIT_MAX: String(LIMIT),
        RATE_LIMIT_WINDOW_MS: '60000',
        // Loopback is the trusted proxy, so X-Forwarded-For names the client: one bucket per address.
        TRUST_PROXY: '127.0.0.1',
      },
    });
    const admin = { ...adminHeaders, 'x-forwarded-for': '198.51.100.1' };
    const account = (await api(server.baseUrl, '/api/accounts', { body: {}, headers: admin })).body.account;
    for (let i = 0; i < 2; i++) {
      const created = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
        body: {},
        headers: admin,
      });
      keys.push(created.body.key as string);
    }
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('per address: exactly the limit passes, the rest is 429 with Retry-After; another address is unaffected', async () => {
    assertExactlyLimited(await burst(server, 100, { 'x-forwarded-for': '203.0.113.10' }), 'address A');
    assertExactlyLimited(await burst(server, 100, { 'x-forwarded-for': '203.0.113.11' }), 'address B');
  });

  test('per API key: each key has its own bucket, apart from its exhausted address', async () => {
    const exhausted = await api(server.baseUrl, '/api/proofs/recent', {
      headers: { 'x-forwarded-for': '203.0.113.10' },
    });
    expectError(exhausted, 429, 'rate_limited');
    for (const [i, key] of keys.entries()) {
      const headers = { 'x-forwarded-for': '203.0.113.10', 'x-service-key': key };
      assertExactlyLimited(await burst(server, 100, headers), `key ${i}`);
    }
  });
});

describe('slow and oversized requests', () => {
  const TIMEOUT_MS = 1500;
  let server: TestServer;
  before(async () => {
    server = await startServer({ env: { REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) } });
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('a client that stalls in its headers or its body is answered 408 and cut off; others are served meanwhile', async (t) => {
    const stalledBody = rawRequest(server.baseUrl, [
      'POST /api/proof/notarize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 200\r\n\r\n{"contentHash":',
    ]);
    const stalledHeaders = rawRequest(server.baseUrl, [
      'POST /api/proof/notarize HTTP/1.1\r\nHost: x\r\nX-A',
    ]);
    // A client that sends a byte now and then does not reset the clock either.
    const dripping = rawRequest(
      server.baseUrl,
      ['POST /api/proof/notarize HTTP/1.1\r\n', ...'Host: x\r\nX-Slow: abcdefghijklmnopqrstuvwxyz'],
      { pauseMs: 100 },
    );
    let cutOff = 0;
    for (const pending of [stalledBody, stalledHeaders, dripping])
      void pending.then(
        () => (cutOff += 1),
        () => {},
      );
    const served: number[] = [];
    for (let i = 0; i < 5; i++) {
      served.push((await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).status);
    }
    assert.deepEqual(served, [200, 200, 200, 200, 200]);
    assert.equal(cutOff, 0, 'they were served while the stalled clients still held their connections');
    for (const [what, pending] of [
      ['stalled body', stalledBody],
      ['stalled headers', stalledHeaders],
      ['dripping headers', dripping],
    ] as const) {
      const res = await pending;
      assert.equal(res.status, 408, `${what}: ${res.status} ${res.text}`);
      assert.equal(res.body?.error?.code, 'request_timeout', what);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', what);
      // Cut off once the timeout is past (Node checks four times per timeout), not after 30 s.
      assert.ok(res.elapsedMs >= TIMEOUT_MS - 100, `${what}: closed after ${res.elapsedMs} ms`);
      assert.ok(res.elapsedMs < TIMEOUT_MS + 4000, `${what}: closed after ${res.elapsedMs} ms`);
      t.diagnostic(`${what}: 408 after ${Math.round(res.elapsedMs)} ms (timeout ${TIMEOUT_MS} ms)`);
    }
    assert.equal((await api(server.baseUrl, '/health')).status, 200);
  });

  test('a body over 128 KiB is refused with 413 whether or not its length is declared', async () => {
    const head =
      'POST /api/proof/notarize HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n';
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const declared = await rawRequest(server.baseUrl, [
      `${head}Content-Length: ${1024 * 1024}\r\n\r\n`,
      chunk,
    ]);
    // Chunked: the length is unknown until the bytes arrive; the server stops at the limit.
    const chunked = await rawRequest(server.baseUrl, [
      `${head}Transfer-Encoding: chunked\r\n\r\n`,
      ...Array.from({ length: 16 }, () =>
        Buffer.concat([Buffer.from('10000\r\n'), chunk, Buffer.from('\r\n')]),
      ),
    ]);
    for (const res of [declared, chunked]) {
      assert.equal(res.status, 413, res.text);
      assert.equal(res.body?.error?.code, 'payload_too_large');
      // The limit told is this route's (a time-stamp query has another).
      assert.equal(res.body?.error?.message, 'The request body is too large: at most 131072 bytes (128 KiB)');
    }
    assert.equal((await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).status, 200);
  });
});
