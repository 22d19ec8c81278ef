import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api,
  expectError,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
  ignoringLog,
} from '../../test/helper.ts';
import { metadataHash } from '../core/hashing.ts';
import { hmacSign } from '../core/proof-signature.ts';

let server: TestServer;
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  server.cleanup();
});

const notarize = (body: unknown, headers: Record<string, string> = {}) =>
  api(server.baseUrl, '/api/proof/notarize', { body, headers });

describe('POST /api/proof/notarize: creation', () => {
  test('creates a signed proof with the documented shape', async () => {
    const metadata = { pipeline: 'ci', run: 42, nested: { ok: true } };
    const res = await notarize(notarizeBody({ contentHash: 'sha256:' + 'AB'.repeat(32), metadata }));
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['idempotentReplay', 'links', 'mode', 'ok', 'proof']);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.mode, 'demo');
    assert.equal(res.body.idempotentReplay, false);
    const { proof } = res.body;
    assert.match(proof.id, /^proof_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(proof.verified, true);
    assert.match(proof.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Math.abs(Date.parse(proof.timestamp) - Date.now()) < 10_000);
    assert.equal(proof.contentHash, 'sha256:' + 'ab'.repeat(32), 'stored lowercase');
    assert.equal(proof.label, 'release v1.0.0');
    assert.equal(proof.metadataHash, metadataHash(metadata));
    assert.deepEqual(proof.metadataKeys, ['nested', 'pipeline', 'run']);
    assert.equal(proof.accountId, null);
    assert.equal(proof.payment, null);
    assert.deepEqual(res.body.links, {
      proof: `/proof/${proof.id}`,
      verify: `/api/verify/proofs/${proof.id}`,
    });
    // The signature is the HMAC of the canonical signing message under the service's active key.
    assert.equal(proof.keyId, server.ctx.keyring.active.keyId);
    assert.equal(proof.signature, hmacSign(server.ctx.keyring.active.secret, proof));
  });

  test('raw metadata never appears in any response', async () => {
    const secretish = 'value-that-must-not-be-published-4711';
    const res = await notarize(notarizeBody({ metadata: { note: secretish } }));
    assert.equal(res.status, 200);
    const id = res.body.proof.id;
    const reads = [];
    for (const path of [
      `/api/proofs/${id}`,
      `/api/verify/proofs/${id}`,
      '/api/proofs/recent',
      `/api/proofs/search?q=${id}`,
    ]) {
      const read = await api(server.baseUrl, path);
      reads.push(read);
      assert.equal(read.status, 200, path);
      assert.ok(!read.text.includes(secretish), path);
      assert.ok(read.text.includes('note'), `${path} shows the key name`);
    }
    assert.ok(!res.text.includes(secretish));
    // Every request's access-log line is the last it writes: once they are all there, search.
    for (const response of [res, ...reads]) await server.requestLogged(response);
    assert.ok(!server.logs.join('\n').includes(secretish), 'not logged either');
  });

  test('absent metadata hashes as {} and has no keys', async () => {
    const res = await notarize(notarizeBody());
    assert.equal(
      res.body.proof.metadataHash,
      'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
    );
    assert.deepEqual(res.body.proof.metadataKeys, []);
  });

  test('accepts the bounds exactly: label of 1 and 120 characters, key of 160, metadata of 8192 bytes', async () => {
    const filler = 'x'.repeat(8192 - JSON.stringify({ a: '' }).length);
    const cases = [
      { metadata: JSON.parse('{"a":'.repeat(32) + '1' + '}'.repeat(32)) },
      { label: 'a' },
      { label: '€'.repeat(120) },
      { label: '😀'.repeat(120), idempotencyKey: 'k'.repeat(160) },
      { metadata: { a: filler } },
    ];
    for (const overrides of cases) {
      const res = await notarize(notarizeBody(overrides));
      assert.equal(res.status, 200, `${JSON.stringify(overrides).slice(0, 60)}: ${res.text.slice(0, 200)}`);
    }
  });
});

describe('POST /api/proof/notarize: invalid requests answer 400 and create nothing', () => {
  const invalid: [string, Record<string, unknown>, string][] = [
    ['missing contentHash', { contentHash: undefined }, '/contentHash'],
    ['contentHash without prefix', { contentHash: 'a'.repeat(64) }, '/contentHash'],
    ['contentHash with 63 hex digits', { contentHash: 'sha256:' + 'a'.repeat(63) }, '/contentHash'],
    ['contentHash with 65 hex digits', { contentHash: 'sha256:' + 'a'.repeat(65) }, '/contentHash'],
    ['contentHash with a non-hex digit', { contentHash: 'sha256:' + 'g'.repeat(64) }, '/contentHash'],
    ['contentHash with an uppercase prefix', { contentHash: 'SHA256:' + 'a'.repeat(64) }, '/contentHash'],
    ['contentHash as a number', { contentHash: 5 }, '/contentHash'],
    ['missing label', { label: undefined }, '/label'],
    ['empty label', { label: '' }, '/label'],
    ['label of 121 characters', { label: 'a'.repeat(121) }, '/label'],
    ['label as a number', { label: 5 }, '/label'],
    ['label with a newline', { label: 'two\nlines' }, '/label'],
    ['label with NUL', { label: 'a\u0000b' }, '/label'],
    ['label with an unpaired surrogate', { label: 'a\ud800b' }, '/label'],
    ['missing idempotencyKey', { idempotencyKey: undefined }, '/idempotencyKey'],
    ['empty idempotencyKey', { idempotencyKey: '' }, '/idempotencyKey'],
    ['idempotencyKey of 161 characters', { idempotencyKey: 'k'.repeat(161) }, '/idempotencyKey'],
    ['idempotencyKey as a number', { idempotencyKey: 1 }, '/idempotencyKey'],
    ['metadata as an array', { metadata: [1, 2] }, '/metadata'],
    ['metadata as a string', { metadata: 'x' }, '/metadata'],
    ['metadata as null', { metadata: null }, '/metadata'],
    [
      'metadata of 8193 bytes',
      { metadata: { a: 'x'.repeat(8193 - JSON.stringify({ a: '' }).length) } },
      '/metadata',
    ],
    [
      'metadata nested 33 levels deep',
      { metadata: JSON.parse('{"a":'.repeat(33) + '1' + '}'.repeat(33)) },
      '/metadata',
    ],
    [
      'metadata nested 4000 arrays deep',
      { metadata: { a: JSON.parse('['.repeat(4000) + ']'.repeat(4000)) } },
      '/metadata',
    ],
    ['metadata with an unpaired surrogate', { metadata: { a: ['ok', '\udc00'] } }, '/metadata/a/1'],
    ['an extra property', { extra: true }, '/extra'],
  ];
  for (const [name, overrides, path] of invalid) {
    test(name, async () => {
      const idempotencyKey = `invalid-${name}`;
      const body = { ...notarizeBody({ idempotencyKey }), ...overrides };
      const res = await notarize(body);
      const error = expectError(res, 400, 'invalid_request');
      assert.ok(
        error.details.errors.some((e: { path: string }) => e.path === path),
        `expected an error at ${path}: ${res.text}`,
      );
      assert.ok(error.message.includes(path.split('/')[1] ?? ''), error.message);
      const search = await api(
        server.baseUrl,
        `/api/proofs/search?idempotencyKey=${encodeURIComponent(idempotencyKey)}`,
      );
      assert.deepEqual(search.body.proofs, [], 'nothing was stored');
    });
  }

  test('every failing field is listed, not only the first', async () => {
    const res = await notarize({ contentHash: 'x', label: '', extra: 1 });
    const error = expectError(res, 400, 'invalid_request');
    const paths = error.details.errors.map((e: { path: string }) => e.path).sort();
    assert.deepEqual(paths, ['/contentHash', '/extra', '/idempotencyKey', '/label']);
  });

  test('a JSON value that is not an object', async () => {
    for (const body of [[], 'text', 42, null]) {
      expectError(await notarize(body), 400, 'invalid_request');
    }
  });

  test('malformed JSON is invalid_json', async () => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      rawBody: '{"contentHash": "sha256:',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'invalid_json');
  });

  test('a __proto__ key is refused as invalid_json', async () => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      rawBody: `{"contentHash":"${sampleHash(9)}","label":"x","idempotencyKey":"p","metadata":{"__proto__":{"admin":true}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 400, 'invalid_json');
  });

  test('a content type other than JSON is 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        rawBody: JSON.stringify(notarizeBody()),
        headers: { 'content-type': type },
      });
      expectError(res, 415, 'unsupported_media_type');
    }
  });

  test('application/json with a charset is accepted', async () => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      rawBody: JSON.stringify(notarizeBody()),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    assert.equal(res.status, 200);
  });

  test('a body of 128 KiB is read; one byte more is 413', async () => {
    const padded = (size: number) => {
      const base = JSON.stringify(notarizeBody({ idempotencyKey: 'size-' + size }));
      return base.slice(0, -1) + ' '.repeat(size - base.length) + '}';
    };
    const atLimit = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      rawBody: padded(131072),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(atLimit.status, 200, atLimit.text);
    const over = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      rawBody: padded(131073),
      headers: { 'content-type': 'application/json' },
    });
    expectError(over, 413, 'payload_too_large');
  });
});

describe('POST /api/proof/notarize: idempotency', () => {
  test('the same key and content replays the stored proof unchanged', async () => {
    const body = notarizeBody({ metadata: { b: 2, a: 1 } });
    const first = await notarize(body);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // Key order of metadata and case of the hash do not make it a different request.
    const second = await notarize({
      ...body,
      metadata: { a: 1, b: 2 },
      contentHash: String(body.contentHash).toUpperCase().replace('SHA256', 'sha256'),
    });
    assert.equal(second.status, 200);
    assert.equal(second.body.idempotentReplay, true);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(ignoringLog(second.body.proof), ignoringLog(first.body.proof));
    assert.deepEqual(second.body.links, first.body.links);
  });

  for (const [field, value] of [
    ['contentHash', sampleHash(777)],
    ['label', 'another label'],
    ['metadata', { other: true }],
  ] as const) {
    test(`the same key with another ${field} is 422 idempotency_key_reused and creates nothing`, async () => {
      const body = notarizeBody({ metadata: { a: 1 } });
      const first = await notarize(body);
      assert.equal(first.status, 200);
      const reused = await notarize({ ...body, [field]: value });
      const error = expectError(reused, 422, 'idempotency_key_reused');
      assert.equal(error.details.proofId, first.body.proof.id);
      const search = await api(
        server.baseUrl,
        `/api/proofs/search?idempotencyKey=${encodeURIComponent(String(body.idempotencyKey))}`,
      );
      assert.equal(search.body.proofs.length, 1);
    });
  }

  test('a label that differs only by case is a different request', async () => {
    const body = notarizeBody({ label: 'Release' });
    assert.equal((await notarize(body)).status, 200);
    expectError(await notarize({ ...body, label: 'release' }), 422, 'idempotency_key_reused');
  });

  test('50 concurrent requests with one new key create exactly one proof', async () => {
    const body = notarizeBody({ idempotencyKey: 'concurrent-' + Date.now() });
    const responses = await Promise.all(Array.from({ length: 50 }, () => notarize(body)));
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
    const created = responses.filter((r) => r.body.idempotentReplay === false);
    assert.equal(created.length, 1);
    assert.equal(new Set(responses.map((r) => r.body.proof.id)).size, 1);
    const search = await api(
      server.baseUrl,
      `/api/proofs/search?idempotencyKey=${encodeURIComponent(String(body.idempotencyKey))}`,
    );
    assert.equal(search.body.proofs.length, 1);
  });

  test('concurrent requests with one key but different content: one proof, the others 200 replay or 422', async () => {
    const key = 'race-' + Date.now();
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        notarize(notarizeBody({ idempotencyKey: key, label: `label ${i % 2}` })),
      ),
    );
    const created = responses.filter((r) => r.status === 200 && r.body.idempotentReplay === false);
    assert.equal(created.length, 1);
    const winnerLabel = created[0]?.body.proof.label;
    for (const r of responses) {
      if (r.status === 200) assert.equal(r.body.proof.label, winnerLabel);
      else expectError(r, 422, 'idempotency_key_reused');
    }
  });

  test('many different keys at once each get their own proof', async () => {
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => notarize(notarizeBody({ contentHash: sampleHash(5000 + i) }))),
    );
    assert.ok(responses.every((r) => r.status === 200 && r.body.idempotentReplay === false));
    assert.equal(new Set(responses.map((r) => r.body.proof.id)).size, 100);
  });
});
