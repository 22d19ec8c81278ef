import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ADMIN_KEY, api } from '../test/helper.ts';
import { rawRequest, requestParts, type RawResponse } from '../test/raw-http.ts';
import {
  assertClientError,
  concretePath,
  hostileJson,
  hostileString,
  notarizeLike,
  operations,
  server,
  withHostileTarget,
} from './hostile-input-test-setup.ts';

withHostileTarget();

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
        // Valid JSON but for its trailing blanks, which take it past the operation's body limit.
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
        // A batch takes up to 2 MiB, every other body up to 128 KiB: past each by as much.
        const over = operation.path === '/api/proof/batch' ? 2 * 1024 * 1024 - 128 * 1024 : 0;
        if (delivery.kind === 'oversized')
          body = Buffer.concat([body, Buffer.alloc(delivery.size + over, ' ')]);
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

test('after all of that the service still serves', async () => {
  assert.equal((await api(server.baseUrl, '/health')).status, 200);
  const created = await api(server.baseUrl, '/api/proof/notarize', {
    body: { contentHash: 'sha256:' + 'd'.repeat(64), label: 'still here', idempotencyKey: 'after-fuzz' },
  });
  assert.equal(created.status, 200);
});
