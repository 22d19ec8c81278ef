import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { adminHeaders, api, notarizeBody } from '../test/helper.ts';
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
