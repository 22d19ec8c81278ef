import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  type ApiResponse,
  notarizeBody,
  startServer,
  type TestServer,
} from '../test/helper.ts';
import { rawRequest, requestParts, type RawResponse } from '../test/raw-http.ts';

let server: TestServer;
let operations: { method: string; path: string }[] = [];
before(async () => {
  // A random Content-Length longer than the body sent stalls the request: the timeout ends it quickly.
  server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, REQUEST_TIMEOUT_MS: '1000' } });
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

/** A raw answer checked like one from `fetch`: answered at all, below 500, errors in the envelope. */
function assertRawClientError(res: RawResponse, what: string): void {
  assert.ok(res.status >= 200, `${what}: no answer (${res.text.slice(0, 100)})`);
  assertClientError(
    { status: res.status, headers: new Headers(res.headers), body: res.body, text: res.text },
    what,
  );
}

const TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const withoutLineBreaks = (bytes: Buffer) => Buffer.from(bytes.filter((b) => b !== 10 && b !== 13));
const headerName = fc.oneof(
  fc.string({ unit: fc.constantFrom(...TOKEN), minLength: 1, maxLength: 24 }),
  // Not tokens at all: spaces, NUL, bytes above 127 in the name.
  fc
    .uint8Array({ minLength: 1, maxLength: 16 })
    .map((bytes) => withoutLineBreaks(Buffer.from(bytes)).toString('latin1'))
    .filter((name) => name.length > 0),
  fc.constantFrom(
    'content-length',
    'transfer-encoding',
    'content-type',
    'content-encoding',
    'expect',
    'host',
    'x-service-key',
    'x-service-admin-key',
    'x-forwarded-for',
    'origin',
    'access-control-request-method',
    'range',
    'if-none-match',
    'authorization',
    'cookie',
    'payment-signature',
    'upgrade',
    'te',
    'trailer',
    '__proto__',
    'constructor',
  ),
);
const headerValue = fc.oneof(
  hostileString.map((text) => withoutLineBreaks(Buffer.from(text))),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => withoutLineBreaks(Buffer.from(bytes))),
  fc.nat().map((n) => Buffer.from(String(n))),
  fc.integer({ min: 1000, max: 20_000 }).map((n) => Buffer.from('v'.repeat(n))),
);

test('random header names and values, valid or not, at every documented operation', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...operations),
      fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
      notarizeLike,
      async (operation, headers, body) => {
        const isPost = operation.method === 'POST';
        const res = await rawRequest(
          server.baseUrl,
          requestParts(operation.method, concretePath(operation.path, 'proof_x'), {
            headers: [...headers, ['content-type', 'application/json']],
            ...(isPost ? { body: Buffer.from(JSON.stringify(body)) } : {}),
          }),
        );
        assertRawClientError(
          res,
          `${operation.method} ${operation.path} ${JSON.stringify(headers).slice(0, 200)}`,
        );
      },
    ),
    { numRuns: 200 },
  );
});

test('bodies sent whole, oversized or slowly in pieces to every operation that takes one', async () => {
  const posts = operations.filter((operation) => operation.method === 'POST');
  assert.ok(posts.length >= 5, `${posts.length} operations take a body`);
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...posts),
      fc.oneof(notarizeLike, hostileJson),
      fc.oneof(
        fc.constant({ kind: 'whole' as const }),
        // Valid JSON but for its trailing blanks, which take it past 128 KiB.
        fc
          .integer({ min: 128 * 1024, max: 400 * 1024 })
          .map((size) => ({ kind: 'oversized' as const, size })),
        fc.record({
          kind: fc.constant('slow' as const),
          pieces: fc.integer({ min: 2, max: 5 }),
          pauseMs: fc.integer({ min: 1, max: 25 }),
        }),
      ),
      fc.boolean(),
      async (operation, value, delivery, chunked) => {
        let body = Buffer.from(JSON.stringify(value) ?? 'null');
        if (delivery.kind === 'oversized') body = Buffer.concat([body, Buffer.alloc(delivery.size, ' ')]);
        const parts = requestParts('POST', concretePath(operation.path, 'x1'), {
          headers: [
            ['content-type', 'application/json'],
            ['x-service-admin-key', ADMIN_KEY],
          ],
          body,
          chunked,
          pieces: delivery.kind === 'slow' ? delivery.pieces : 1,
        });
        const res = await rawRequest(server.baseUrl, parts, {
          pauseMs: delivery.kind === 'slow' ? delivery.pauseMs : 0,
        });
        const what = `${operation.path} ${delivery.kind} ${chunked ? 'chunked' : 'sized'}`;
        assertRawClientError(res, what);
        if (delivery.kind === 'oversized') {
          assert.equal(res.status, 413, `${what}: ${res.text.slice(0, 200)}`);
          assert.equal(res.body?.error?.code, 'payload_too_large');
        }
      },
    ),
    { numRuns: 120 },
  );
});

test('__proto__ and constructor.prototype keys at every JSON operation pollute nothing', async () => {
  const before = Object.getOwnPropertyNames(Object.prototype).sort();
  const poisons = [
    '{"__proto__":{"polluted":1}}',
    '{"constructor":{"prototype":{"polluted":1}}}',
    '{"metadata":{"__proto__":{"polluted":1}},"label":"x","idempotencyKey":"p1","contentHash":"sha256:' +
      'e'.repeat(64) +
      '"}',
    '{"metadata":{"a":[{"constructor":{"prototype":{"polluted":1}}}]},"label":"x","idempotencyKey":"p2",' +
      '"contentHash":"sha256:' +
      'e'.repeat(64) +
      '"}',
    '{"name":"x","__proto__":{"polluted":1,"isAdmin":true}}',
  ];
  const posts = operations.filter((operation) => operation.method === 'POST');
  for (const operation of posts) {
    for (const poison of poisons) {
      const path =
        concretePath(operation.path, 'x1') + '?__proto__[polluted]=1&constructor[prototype][polluted]=1';
      const res = await api(server.baseUrl, path, {
        method: 'POST',
        rawBody: poison,
        // A computed key: a literal `__proto__:` would set the prototype instead of sending a header.
        headers: { 'content-type': 'application/json', ...adminHeaders, ['__proto__']: 'x' },
      });
      const what = `${operation.path} ${poison.slice(0, 40)}`;
      assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} ${res.text.slice(0, 200)}`);
      assertClientError(res, `POST ${what}`);
      // Refused as poisoned JSON, not silently stripped and then judged on what is left.
      assert.equal(res.body.error.code, 'invalid_json', what);
    }
  }
  // Nothing reached the prototypes of this process, which runs the server.
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(({} as Record<string, unknown>).isAdmin, undefined);
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), before);
  // And the service behaves as before: a normal proof and a normal account.
  const proof = await api(server.baseUrl, '/api/proof/notarize', {
    body: notarizeBody({ metadata: { polluted: 'no' } }),
  });
  assert.equal(proof.status, 200, proof.text);
  assert.deepEqual(proof.body.proof.metadataKeys, ['polluted']);
  const account = await api(server.baseUrl, '/api/accounts', {
    body: { name: 'after' },
    headers: adminHeaders,
  });
  assert.equal(account.status, 201, account.text);
  assert.equal(account.body.account.name, 'after');
  assert.equal('polluted' in account.body.account, false);
});

test('after all of that the service still serves', async () => {
  assert.equal((await api(server.baseUrl, '/health')).status, 200);
  const created = await api(server.baseUrl, '/api/proof/notarize', {
    body: { contentHash: 'sha256:' + 'd'.repeat(64), label: 'still here', idempotencyKey: 'after-fuzz' },
  });
  assert.equal(created.status, 200);
});
