import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  type ApiResponse,
  startServer,
  type TestServer,
} from '../test/helper.ts';

let server: TestServer;
let operations: { method: string; path: string }[] = [];
before(async () => {
  server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY } });
  const doc = (await api(server.baseUrl, '/openapi.json')).body as {
    paths: Record<string, Record<string, unknown>>;
  };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
  );
});
after(async () => {
  await server.close();
  server.cleanup();
});

/** Every answer to hostile input is a success or a 4xx in the error envelope; never a 5xx. */
function assertClientError(res: ApiResponse, what: string): void {
  assert.ok(res.status < 500, `${what} → ${res.status} ${res.text.slice(0, 300)}`);
  // Pages and the SVG badge answer errors for people (an HTML page, a "not found" badge); the API, JSON.
  const isJson = res.headers.get('content-type')?.includes('json') ?? false;
  if (what.includes(' /api/')) assert.ok(res.status < 400 || isJson, `${what}: an API error must be JSON`);
  if (res.status >= 400 && isJson) {
    const error = res.body?.error;
    assert.ok(
      error && typeof error.code === 'string' && typeof error.message === 'string',
      `${what}: ${res.text.slice(0, 200)}`,
    );
    assert.equal(typeof error.details, 'object');
  }
}

const hostileString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '__proto__',
    'constructor',
    '../../etc/passwd',
    "' or 1=1 --",
    '%00',
    '\u0000',
    '\ud800',
    '<script>',
    'sha256:' + 'f'.repeat(64),
  ),
);
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.double(),
    fc.integer(),
    fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0, -0, true, false, null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 5 }),
  ),
})).value;
const notarizeLike = fc.record(
  {
    contentHash: fc.oneof(
      hostileString,
      fc
        .string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 })
        .map((h) => 'sha256:' + h),
      hostileJson,
    ),
    label: fc.oneof(hostileString, hostileJson),
    metadata: hostileJson,
    idempotencyKey: fc.oneof(hostileString, hostileJson),
  },
  { requiredKeys: [] },
);

/** Percent-encodes every byte of the UTF-8 form, so even unpaired surrogates make a valid URL. */
const encodeBytes = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('');
const concretePath = (path: string, id: string) => path.replace(/\{[^}]+\}/g, encodeBytes(id));

test('every documented operation survives random bodies, ids, queries and headers', async () => {
  assert.ok(operations.length >= 10, `the OpenAPI document lists ${operations.length} operations`);
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...operations),
      fc.oneof(notarizeLike, hostileJson),
      hostileString,
      fc.dictionary(
        fc.constantFrom(
          'q',
          'limit',
          'cursor',
          'contentHash',
          'metadataHash',
          'accountId',
          'idempotencyKey',
          'x',
        ),
        hostileString,
        { maxKeys: 3 },
      ),
      fc.constantFrom<Record<string, string>>(
        {},
        adminHeaders,
        { 'x-service-key': 'hp_' + 'A'.repeat(43) },
        { 'x-service-admin-key': 'nope' },
      ),
      async (operation, body, id, query, headers) => {
        const search = new URLSearchParams(query).toString();
        const path = concretePath(operation.path, id) + (search ? `?${search}` : '');
        const res = await api(server.baseUrl, path, {
          method: operation.method,
          headers,
          ...(operation.method === 'POST' ? { body } : {}),
        });
        assertClientError(res, `${operation.method} ${path}`);
      },
    ),
    { numRuns: 300 },
  );
});

test('raw bytes, truncated JSON, duplicate keys and wrong content types never cause a 5xx', async () => {
  const valid = JSON.stringify({
    contentHash: 'sha256:' + 'a'.repeat(64),
    label: 'x',
    idempotencyKey: 'dup',
  });
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.string({ unit: 'binary' }),
        fc.nat({ max: valid.length }).map((n) => valid.slice(0, n)),
        fc.constantFrom(
          '{"label":"a","label":"b","contentHash":"sha256:' +
            'b'.repeat(64) +
            '","idempotencyKey":"dupkeys"}',
          '{"metadata":{"constructor":{"prototype":{"x":1}}},"label":"x","idempotencyKey":"c","contentHash":"sha256:' +
            'c'.repeat(64) +
            '"}',
          '['.repeat(50_000) + ']'.repeat(50_000),
          '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000),
          '\u0000',
          '',
        ),
      ),
      fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/octet-stream',
        'multipart/form-data; boundary=x',
      ),
      async (raw, contentType) => {
        for (const path of ['/api/proof/notarize', '/api/accounts']) {
          const res = await api(server.baseUrl, path, {
            method: 'POST',
            rawBody: raw,
            headers: { 'content-type': contentType, ...adminHeaders },
          });
          assertClientError(res, `${path} ${contentType} ${JSON.stringify(raw.slice(0, 40))}`);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('after all of that the service still serves', async () => {
  assert.equal((await api(server.baseUrl, '/health')).status, 200);
  const created = await api(server.baseUrl, '/api/proof/notarize', {
    body: { contentHash: 'sha256:' + 'd'.repeat(64), label: 'still here', idempotencyKey: 'after-fuzz' },
  });
  assert.equal(created.status, 200);
});
