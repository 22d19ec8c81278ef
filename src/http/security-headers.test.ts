import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { rawRequest } from '../../test/raw-http.ts';

const SECURITY_HEADERS = [
  'content-security-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'referrer-policy',
  'strict-transport-security',
  'x-content-type-options',
  'x-dns-prefetch-control',
  'x-frame-options',
  'x-permitted-cross-domain-policies',
];

let server: TestServer;
before(async () => {
  server = await startServer({
    env: {
      SERVICE_ADMIN_KEY: ADMIN_KEY,
      RATE_LIMIT_MAX: '2',
      // Each request below names its own client address, so only the one meant to be limited is.
      TRUST_PROXY: '127.0.0.1',
    },
  });
});
after(async () => {
  await server.close();
  server.cleanup();
});

let client = 0;
const fromNewClient = (headers: Record<string, string> = {}) => ({
  ...headers,
  'x-forwarded-for': `203.0.113.${++client}`,
});

describe('security headers', () => {
  test('every error carries the same security headers as a success, and a request id', async () => {
    const ok = await api(server.baseUrl, '/api/proofs/recent', { headers: fromNewClient() });
    assert.equal(ok.status, 200);
    const expected = Object.fromEntries(SECURITY_HEADERS.map((name) => [name, ok.headers.get(name)]));
    for (const value of Object.values(expected)) assert.ok(value, 'the success has every header');
    assert.equal(expected['x-frame-options'], 'DENY');
    assert.match(expected['content-security-policy'] ?? '', /default-src 'none'/);

    const json = { 'content-type': 'application/json' };
    const limitedClient = fromNewClient();
    for (let i = 0; i < 2; i++) await api(server.baseUrl, '/api/proofs/recent', { headers: limitedClient });
    const errors = {
      '400 invalid_request': await api(server.baseUrl, '/api/proofs/recent?limit=0', {
        headers: fromNewClient(),
      }),
      '400 malformed URL': await api(server.baseUrl, '/api/proofs/%zz', { headers: fromNewClient() }),
      '400 invalid_json': await api(server.baseUrl, '/api/proof/notarize', {
        rawBody: '{"contentHash":',
        headers: fromNewClient(json),
      }),
      '401 unauthorized': await api(server.baseUrl, '/api/accounts', { headers: fromNewClient() }),
      '404 not_found': await api(server.baseUrl, '/nope', { headers: fromNewClient() }),
      '413 payload_too_large': await api(server.baseUrl, '/api/proof/notarize', {
        rawBody: JSON.stringify(notarizeBody({ label: 'x'.repeat(200_000) })),
        headers: fromNewClient(json),
      }),
      '415 unsupported_media_type': await api(server.baseUrl, '/api/proof/notarize', {
        rawBody: 'x',
        headers: fromNewClient({ 'content-type': 'text/plain' }),
      }),
      '429 rate_limited': await api(server.baseUrl, '/api/proofs/recent', { headers: limitedClient }),
    };
    for (const [what, res] of Object.entries(errors)) {
      assert.equal(res.status, Number(what.slice(0, 3)), `${what}: ${res.text}`);
      assert.equal(res.body?.error?.code, what.split(' ')[1]?.replace('malformed', 'invalid_request'));
      for (const name of SECURITY_HEADERS)
        assert.equal(res.headers.get(name), expected[name], `${what}: ${name}`);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, what);
    }

    // A request Node's HTTP parser refuses never becomes a request, and is answered with them too.
    const unparsable = {
      '400 invalid_request': 'GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n',
      '431 headers_too_large': `GET /health HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20_000)}\r\n\r\n`,
    };
    for (const [what, request] of Object.entries(unparsable)) {
      const res = await rawRequest(server.baseUrl, [request]);
      assert.equal(res.status, Number(what.slice(0, 3)), `${what}: ${res.text}`);
      assert.equal(res.body?.error?.code, what.split(' ')[1]);
      for (const name of SECURITY_HEADERS)
        assert.equal(res.headers[name], expected[name], `${what}: ${name}`);
    }
  });
});

describe('CORS', () => {
  let operations: { method: string; path: string }[] = [];
  before(async () => {
    const doc = (await api(server.baseUrl, '/openapi.json', { headers: fromNewClient() })).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
    );
  });
  const isAdmin = (path: string) => server.app.adminRoutes.covers(path);
  const preflight = (path: string, method: string) =>
    api(server.baseUrl, path.replace(/\{[^}]+\}/g, 'x1'), {
      method: 'OPTIONS',
      headers: fromNewClient({
        origin: 'https://elsewhere.example',
        'access-control-request-method': method,
        'access-control-request-headers': 'content-type,x-service-key',
      }),
    });

  test('a browser on another origin may call every public operation, without credentials', async () => {
    const open = operations.filter((op) => !isAdmin(op.path));
    assert.ok(open.length >= 20, `${open.length} public operations`);
    for (const { method, path } of open) {
      const res = await preflight(path, method);
      assert.equal(res.status, 204, `${method} ${path}`);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', `${method} ${path}`);
      assert.match(res.headers.get('access-control-allow-methods') ?? '', new RegExp(`\\b${method}\\b`));
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /X-Service-Key/);
      assert.equal(res.headers.get('access-control-allow-credentials'), null);
    }
  });

  test('administrator operations are refused to browsers: no preflight passes, no answer is readable', async () => {
    const admin = operations.filter((op) => isAdmin(op.path));
    assert.ok(admin.length >= 8, `${admin.length} administrator operations`);
    for (const { method, path } of admin) {
      const res = await preflight(path, method);
      assert.notEqual(res.status, 204, `${method} ${path}`);
      assert.equal(res.headers.get('access-control-allow-origin'), null, `${method} ${path}`);
    }
    const origin = { origin: 'https://elsewhere.example' };
    const listed = await api(server.baseUrl, '/api/accounts', {
      headers: fromNewClient({ ...origin, ...adminHeaders }),
    });
    assert.equal(listed.status, 200);
    assert.equal(listed.headers.get('access-control-allow-origin'), null);
    const refused = await api(server.baseUrl, '/api/accounts', { headers: fromNewClient(origin) });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
  });
});
