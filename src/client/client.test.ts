import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createClient, HashproofError, verifyOffline } from './client.ts';

async function flakyServer(statuses: number[]) {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      bodies.push(body);
      const status = statuses.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(
        status === 200
          ? JSON.stringify({ ok: true, idempotentReplay: false, proof: { id: 'proof_x' } })
          : JSON.stringify({
              error: {
                code: status === 503 ? 'service_unavailable' : 'invalid_request',
                message: 'no',
                details: {},
              },
            }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    bodies,
    close: () => new Promise((r) => server.close(r)),
  };
}

const input = { contentHash: 'sha256:' + 'a'.repeat(64), label: 'x', idempotencyKey: 'retry-1' };

test('a 5xx is retried with the same idempotency key, and the answer returned', async () => {
  const server = await flakyServer([503, 502]);
  try {
    const result = await createClient({ baseUrl: server.url }).notarize(input);
    assert.equal(result.proof.id, 'proof_x');
    assert.equal(server.bodies.length, 3);
    assert.ok(server.bodies.every((b) => JSON.parse(b).idempotencyKey === 'retry-1'));
  } finally {
    await server.close();
  }
});

test('a 4xx is not retried and surfaces the error envelope', async () => {
  const server = await flakyServer([400]);
  try {
    await assert.rejects(createClient({ baseUrl: server.url }).notarize(input), (error: unknown) => {
      assert.ok(error instanceof HashproofError);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'invalid_request');
      return true;
    });
    assert.equal(server.bodies.length, 1);
  } finally {
    await server.close();
  }
});

test('an unreachable service is a network error after the attempts', async () => {
  await assert.rejects(
    createClient({ baseUrl: 'http://127.0.0.1:9', attempts: 2 }).recent(),
    (error: unknown) => error instanceof HashproofError && error.isNetworkError,
  );
});

test('verifyOffline checks the content hash and the form of the proof', () => {
  const proof = {
    id: 'proof_01M81ENN8CHM3NYND1T40S2ZRP',
    verified: true,
    timestamp: '2026-11-22T11:01:14.124Z',
    contentHash: 'sha256:' + 'b'.repeat(64),
    label: 'x',
    metadataHash: 'sha256:' + 'c'.repeat(64),
    metadataKeys: [],
    signature: 'hmac-sha256:' + 'd'.repeat(64),
    keyId: 'hmac-0',
    accountId: null,
    payment: null,
    receipt: null,
  };
  const status = (checks: ReturnType<typeof verifyOffline>, name: string) =>
    checks.find((c) => c.name === name)?.status;
  assert.equal(status(verifyOffline(proof, 'sha256:' + 'B'.repeat(64)), 'contentHash'), 'valid');
  assert.equal(status(verifyOffline(proof, 'sha256:' + 'e'.repeat(64)), 'contentHash'), 'invalid');
  assert.equal(status(verifyOffline({ ...proof, id: 'nope' }, proof.contentHash), 'format'), 'invalid');
  assert.equal(status(verifyOffline(proof, proof.contentHash), 'signature'), 'unavailable');
  assert.equal(status(verifyOffline(proof, proof.contentHash), 'receipt'), 'unavailable');
});
