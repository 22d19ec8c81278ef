import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  api,
  expectError,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';

let server: TestServer;
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  server.cleanup();
});

const batch = (items: unknown, headers: Record<string, string> = {}) =>
  api(server.baseUrl, '/api/proof/batch', { body: { items }, headers });
const notarize = (body: unknown) => api(server.baseUrl, '/api/proof/notarize', { body });
const run = `run-${process.pid}-${Date.now()}`;
const item = (n: number, overrides: Record<string, unknown> = {}) =>
  notarizeBody({
    contentHash: sampleHash(n),
    label: `file ${n}`,
    idempotencyKey: `${run}-${n}`,
    ...overrides,
  });

describe('POST /api/proof/batch', () => {
  test('1,000 items: each answered in request order with its proof, link and token, all committed', async () => {
    const items = Array.from({ length: 1000 }, (_, i) => item(100_000 + i));
    const res = await batch(items);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.mode, 'demo');
    assert.equal(res.body.items.length, 1000);
    const ids = new Set<string>();
    for (const [i, answer] of res.body.items.entries()) {
      assert.equal(answer.ok, true);
      assert.equal(answer.idempotentReplay, false);
      assert.equal(answer.proof.contentHash, sampleHash(100_000 + i));
      assert.equal(answer.proof.label, `file ${100_000 + i}`);
      assert.equal(answer.proof.verified, true);
      assert.deepEqual(answer.links, {
        proof: `/proof/${answer.proof.id}`,
        verify: `/api/verify/proofs/${answer.proof.id}`,
      });
      ids.add(answer.proof.id);
    }
    assert.equal(ids.size, 1000);
    // Each proof is stored and readable on its own, with the token the batch answered inline.
    for (const i of [0, 499, 999]) {
      const answer = res.body.items[i];
      const stored = await api(server.baseUrl, `/api/proofs/${answer.proof.id}`);
      assert.equal(stored.status, 200);
      assert.equal(stored.body.proof.contentHash, answer.proof.contentHash);
      const token = await fetch(`${server.baseUrl}/api/proofs/${answer.proof.id}/timestamp.tsr`);
      assert.equal(Buffer.from(await token.arrayBuffer()).toString('base64'), answer.evidence.timestampToken);
    }
  });

  test('the inline token is a real RFC 3161 answer: OpenSSL verifies it against the TSA chain', async () => {
    const res = await batch([item(7_001), item(7_002)]);
    assert.equal(res.status, 200, res.text);
    const dir = mkdtempSync(path.join(tmpdir(), 'batch-token-'));
    try {
      const chain = await (await fetch(`${server.baseUrl}/api/tsa/certs.pem`)).text();
      writeFileSync(path.join(dir, 'chain.pem'), chain);
      for (const answer of res.body.items) {
        writeFileSync(path.join(dir, 'token.tsr'), Buffer.from(answer.evidence.timestampToken, 'base64'));
        const digest = answer.proof.contentHash.slice('sha256:'.length);
        const out = execFileSync(
          'openssl',
          [
            'ts',
            '-verify',
            '-digest',
            digest,
            '-in',
            'token.tsr',
            '-CAfile',
            'chain.pem',
            '-untrusted',
            'chain.pem',
          ],
          { cwd: dir, encoding: 'utf8' },
        );
        assert.match(out, /Verification: OK/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('mixed valid and invalid items: each bad item fails alone with the error notarize gives', async () => {
    const items = [
      item(8_001),
      { ...item(8_002), contentHash: 'md5:abc' },
      { ...item(8_003), extra: true },
      item(8_004, { label: 'two\nlines' }),
      'not an object',
      item(8_005, { metadata: { note: '\ud800' } }),
      item(8_006),
    ];
    const res = await batch(items);
    assert.equal(res.status, 200, res.text);
    const answers = res.body.items;
    assert.deepEqual(
      answers.map((a: { ok: boolean }) => a.ok),
      [true, false, false, false, false, false, true],
    );
    // The same error a notarize call with that body alone answers.
    for (const i of [1, 2, 3, 4, 5]) {
      const alone = await notarize(items[i]);
      const error = expectError(alone, 400, 'invalid_request');
      assert.deepEqual(answers[i].error, error, `item ${i}`);
    }
    assert.equal(answers[1].error.details.errors[0].path, '/contentHash');
  });

  test('duplicate keys: a later item replays the first, other content under the key is 422', async () => {
    const first = item(9_001);
    const res = await batch([first, { ...first }, { ...first, contentHash: sampleHash(9_002) }, item(9_003)]);
    assert.equal(res.status, 200, res.text);
    const [a, b, c, d] = res.body.items;
    assert.equal(a.ok, true);
    assert.equal(a.idempotentReplay, false);
    assert.equal(b.ok, true);
    assert.equal(b.idempotentReplay, true);
    assert.equal(b.proof.id, a.proof.id);
    assert.equal(c.ok, false);
    assert.equal(c.error.code, 'idempotency_key_reused');
    assert.equal(c.error.details.proofId, a.proof.id);
    assert.equal(d.ok, true);
    // Sent again: every item is a replay of the same proofs, and nothing new is made.
    const again = await batch([first, item(9_003)]);
    assert.deepEqual(
      again.body.items.map((x: { idempotentReplay: boolean; proof: { id: string } }) => [
        x.idempotentReplay,
        x.proof.id,
      ]),
      [
        [true, a.proof.id],
        [true, d.proof.id],
      ],
    );
    // A key a single notarize call made is answered the same way inside a batch.
    const single = await notarize(item(9_004));
    const mixed = await batch([item(9_004), item(9_004, { label: 'other' })]);
    assert.equal(mixed.body.items[0].proof.id, single.body.proof.id);
    assert.equal(mixed.body.items[0].idempotentReplay, true);
    assert.equal(mixed.body.items[1].error.code, 'idempotency_key_reused');
  });

  test('limits: 0 and 1,001 items, a body over 2 MiB, a body not JSON, a malformed body', async () => {
    expectError(await batch([]), 400, 'invalid_request');
    const tooMany = await batch(Array.from({ length: 1001 }, (_, i) => item(10_000 + i)));
    const error = expectError(tooMany, 400, 'invalid_request');
    assert.match(error.message, /\/items/);
    // Exactly one byte over 2 MiB, still valid JSON.
    const limit = 2 * 1024 * 1024;
    const shell = JSON.stringify({ items: [item(1)], pad: '' });
    const raw = shell.replace('"pad":""', `"pad":"${'x'.repeat(limit + 1 - shell.length)}"`);
    assert.equal(Buffer.byteLength(raw), limit + 1);
    const big = await api(server.baseUrl, '/api/proof/batch', {
      rawBody: raw,
      headers: { 'content-type': 'application/json' },
    });
    expectError(big, 413, 'payload_too_large');
    // At the limit the body is read (and refused for its extra field, not its size).
    const atLimit = await api(server.baseUrl, '/api/proof/batch', {
      rawBody: raw.replace('"pad":"x', '"pad":"'),
      headers: { 'content-type': 'application/json' },
    });
    expectError(atLimit, 400, 'invalid_request');
    const text = await api(server.baseUrl, '/api/proof/batch', {
      rawBody: JSON.stringify({ items: [item(1)] }),
      headers: { 'content-type': 'text/plain' },
    });
    expectError(text, 415, 'unsupported_media_type');
    const broken = await api(server.baseUrl, '/api/proof/batch', {
      rawBody: '{"items": [',
      headers: { 'content-type': 'application/json' },
    });
    expectError(broken, 400, 'invalid_json');
    expectError(
      await api(server.baseUrl, '/api/proof/batch', { body: { items: 'x' } }),
      400,
      'invalid_request',
    );
  });

  test('a batch racing single notarize calls with the same keys: exactly one proof per key', async () => {
    const items = Array.from({ length: 200 }, (_, i) => item(20_000 + i));
    const [batched, ...singles] = await Promise.all([
      batch(items),
      ...items.filter((_, i) => i % 10 === 0).map((body) => notarize(body)),
    ]);
    assert.equal(batched.status, 200, batched.text);
    for (const single of singles) assert.equal(single.status, 200, single.text);
    const byKey = new Map<string, string>();
    for (const [i, answer] of batched.body.items.entries()) {
      assert.equal(answer.ok, true);
      byKey.set(items[i]!.idempotencyKey as string, answer.proof.id);
    }
    for (const [j, single] of singles.entries()) {
      assert.equal(single.body.proof.id, byKey.get(items[j * 10]!.idempotencyKey as string));
    }
    for (const i of [0, 10, 190]) {
      const found = await api(
        server.baseUrl,
        `/api/proofs/search?idempotencyKey=${encodeURIComponent(items[i]!.idempotencyKey as string)}`,
      );
      assert.equal(found.body.proofs.length, 1);
    }
  });
});
