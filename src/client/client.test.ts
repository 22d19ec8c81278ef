import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createClient, HashproofError, verifyOffline, type Proof } from './client.ts';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  makeDataDir,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { startFlakyProxy, type FlakyProxy } from '../../test/flaky-proxy.ts';
import { startHostileApi, type HostileApi } from '../../test/hostile-api.ts';

let server: TestServer;
let proxy: FlakyProxy;
let work: string;
before(async () => {
  server = await startServer({
    env: { SERVICE_ADMIN_KEY: ADMIN_KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' },
  });
  proxy = await startFlakyProxy(server.baseUrl);
  work = makeDataDir();
});
after(async () => {
  await proxy.close();
  await server.close();
  server.cleanup();
  rmSync(work, { recursive: true, force: true });
});
beforeEach(() => {
  proxy.requests.length = 0;
  proxy.failNext();
});

const input = () => ({
  contentHash: sampleHash(0xc11e),
  label: 'retried',
  idempotencyKey: `retry-${randomUUID()}`,
});
const faults = () => proxy.requests.map((r) => r.fault ?? 'passed');
const isNetworkError = (error: unknown) => error instanceof HashproofError && error.isNetworkError;

describe('retries', () => {
  test('notarize is tried again with the same idempotency key after a 503 and a lost answer: one proof', async () => {
    const client = createClient({ baseUrl: proxy.url });
    const body = input();
    proxy.failNext('unavailable', 'lose-answer');
    const result = await client.notarize(body);
    assert.deepEqual(faults(), ['unavailable', 'lose-answer', 'passed']);
    assert.ok(proxy.requests.every((r) => JSON.parse(r.body).idempotencyKey === body.idempotencyKey));
    assert.equal(result.idempotentReplay, true, 'the proof made for the lost answer is the one returned');
    const found = await api(server.baseUrl, `/api/proofs/search?idempotencyKey=${body.idempotencyKey}`);
    assert.deepEqual(
      found.body.proofs.map((p: Proof) => p.id),
      [result.proof.id],
    );
  });

  test('a network error before the request reached the service, or in the middle of an answer: tried again', async () => {
    const client = createClient({ baseUrl: proxy.url });
    proxy.failNext('drop');
    const result = await client.notarize(input());
    assert.deepEqual(faults(), ['drop', 'passed']);
    assert.equal(result.idempotentReplay, false);
    proxy.failNext('drop', 'break-answer');
    assert.equal((await client.getProof(result.proof.id)).proof.id, result.proof.id, 'a GET too');
    assert.deepEqual(faults().slice(2), ['drop', 'break-answer', 'passed']);
  });

  test('an administrator’s create is sent once: a lost answer or a 503 surfaces, and nothing is made twice', async () => {
    const client = createClient({ baseUrl: proxy.url, adminKey: ADMIN_KEY });
    const name = `Once ${randomUUID()}`;
    proxy.failNext('lose-answer');
    await assert.rejects(client.admin.createAccount({ name }), isNetworkError);
    assert.deepEqual(faults(), ['lose-answer']);
    const listed = await api(server.baseUrl, '/api/accounts', { headers: adminHeaders });
    const accounts = listed.body.accounts.filter((a: { name: string }) => a.name === name);
    assert.equal(accounts.length, 1, 'the service made the account once, and the client did not ask again');
    const accountId = accounts[0].id as string;

    proxy.failNext('unavailable');
    await assert.rejects(client.admin.createApiKey(accountId), (error: unknown) => {
      assert.ok(error instanceof HashproofError);
      assert.equal(error.status, 503);
      return true;
    });
    proxy.failNext('lose-answer');
    await assert.rejects(client.admin.createWebhook(accountId, { url: 'http://127.0.0.1:9/hooks' }));
    assert.deepEqual(faults(), ['lose-answer', 'unavailable', 'lose-answer']);
    assert.equal((await client.admin.listWebhooks(accountId)).webhooks.length, 1);
    assert.equal((await client.admin.listApiKeys(accountId)).apiKeys.length, 0);

    // A revoke answers a revoked key unchanged, so it is safe to send again.
    const { apiKey } = await client.admin.createApiKey(accountId);
    proxy.failNext('lose-answer');
    const revoked = await client.admin.revokeApiKey(apiKey.id);
    assert.equal(revoked.apiKey.status, 'revoked');
    assert.deepEqual(faults().slice(-2), ['lose-answer', 'passed']);
  });

  test('a 4xx is not tried again and surfaces the error envelope', async () => {
    await assert.rejects(
      createClient({ baseUrl: proxy.url }).notarize({ ...input(), contentHash: 'not a hash' }),
      (error: unknown) => {
        assert.ok(error instanceof HashproofError);
        assert.equal(error.status, 400);
        assert.equal(error.code, 'invalid_request');
        return true;
      },
    );
    assert.deepEqual(faults(), ['passed']);
  });

  test('an unreachable service is a network error after the attempts', async () => {
    await assert.rejects(
      createClient({ baseUrl: 'http://127.0.0.1:9', attempts: 2 }).recent(),
      isNetworkError,
    );
  });
});

describe('verifyOffline', () => {
  test('takes a file (hashed as a stream) or a hash', async () => {
    const file = path.join(work, 'contract.pdf');
    writeFileSync(file, 'signed contract');
    const contentHash = 'sha256:' + createHash('sha256').update('signed contract').digest('hex');
    const client = createClient({ baseUrl: server.baseUrl });
    const { proof } = await client.notarize({ ...input(), contentHash });
    const statusOf = async (content: Parameters<typeof verifyOffline>[1]) =>
      (await verifyOffline(proof, content)).find((c) => c.name === 'contentHash')?.status;

    assert.equal(await statusOf(file), 'valid', 'a path');
    assert.equal(await statusOf({ path: file }), 'valid');
    assert.equal(await statusOf(contentHash), 'valid', 'a sha256: hash');
    assert.equal(await statusOf({ hash: contentHash }), 'valid');
    assert.equal(await statusOf({ hash: sampleHash(7) }), 'invalid');
    // A file whose name looks like a hash is named with { path }.
    const hashNamed = path.join(work, sampleHash(7));
    writeFileSync(hashNamed, 'signed contract');
    assert.equal(await statusOf({ path: hashNamed }), 'valid');
    writeFileSync(file, 'signed contract, amended');
    assert.equal(await statusOf(file), 'invalid', 'a changed file');
    await assert.rejects(
      verifyOffline(proof, path.join(work, 'missing.pdf')),
      (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
    );
  });

  test('checks the form of the proof', async () => {
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
    const status = async (checks: ReturnType<typeof verifyOffline>, name: string) =>
      (await checks).find((c) => c.name === name)?.status;
    assert.equal(await status(verifyOffline(proof, 'sha256:' + 'B'.repeat(64)), 'contentHash'), 'valid');
    assert.equal(await status(verifyOffline(proof, 'sha256:' + 'e'.repeat(64)), 'contentHash'), 'invalid');
    assert.equal(
      await status(verifyOffline({ ...proof, id: 'nope' }, proof.contentHash), 'format'),
      'invalid',
    );
    // Only the service checks its HMAC: reported as unchecked offline, never as valid.
    assert.equal(await status(verifyOffline(proof, proof.contentHash), 'signature'), 'unchecked');
    assert.equal(await status(verifyOffline(proof, proof.contentHash), 'receipt'), 'unavailable');
  });
});

describe('a hostile service', () => {
  let hostile: HostileApi;
  before(async () => {
    hostile = await startHostileApi({ upstream: server.baseUrl });
  });
  after(() => hostile.close());
  const rejectsWith = (code: string) => (error: unknown) => {
    assert.ok(error instanceof HashproofError, String(error));
    assert.equal(error.code, code, error.message);
    assert.ok(error.couldNotCheck);
    return true;
  };

  test(
    'evidence() goes through the one call: its answers are capped and timed, and a 429 is waited out',
    { timeout: 120_000 },
    async () => {
      const { proof } = await createClient({ baseUrl: server.baseUrl }).notarize(input());
      const client = createClient({ baseUrl: hostile.url, timeoutMs: 500 });
      const token = `/api/proofs/${proof.id}/timestamp.tsr`;
      hostile.misbehave(token, { fault: 'huge', hugeBytes: 64 * 2 ** 20 });
      await assert.rejects(client.evidence(proof.id), rejectsWith('answer_too_large'));
      hostile.misbehave(token, 'silent');
      await assert.rejects(client.evidence(proof.id), rejectsWith('timeout'));
      assert.equal(hostile.statuses(token).length, 1 + 3, 'a silent GET is tried three times');
      hostile.misbehave(token, undefined);
      hostile.misbehave('/api/tsa/certs.pem', { fault: 'rate-limited', retryAfter: '1', times: 1 });
      const evidence = await client.evidence(proof.id);
      assert.deepEqual(
        hostile.statuses('/api/tsa/certs.pem'),
        [429, 200],
        'tried again after its Retry-After',
      );
      assert.ok(evidence.timestampToken && evidence.tsaCertificates?.includes('BEGIN CERTIFICATE'));
    },
  );

  test('a 429 is tried again even for a create; a Retry-After over 60 s is refused at once', async () => {
    const client = createClient({ baseUrl: hostile.url, adminKey: ADMIN_KEY });
    hostile.misbehave('/api/accounts', { fault: 'rate-limited', retryAfter: '0', times: 1 });
    const { account } = await client.admin.createAccount({ name: `Limited ${randomUUID()}` });
    assert.match(account.id, /^acct_/);
    assert.deepEqual(hostile.statuses('/api/accounts'), [429, 201]);
    const later = new Date(Date.now() + 3_600_000).toUTCString();
    hostile.misbehave('/api/proofs/recent', { fault: 'rate-limited', retryAfter: later });
    await assert.rejects(client.recent(), (error: unknown) => {
      assert.ok(error instanceof HashproofError && error.status === 429 && error.couldNotCheck);
      assert.match(error.message, /asks to wait 3\d{3} s, over the 60 s this client waits/);
      return true;
    });
    assert.equal(hostile.statuses('/api/proofs/recent').length, 1, 'asked once');
  });

  test('a malformed answer, or one of the wrong form, is malformed_answer; a redirect is followed nowhere', async () => {
    const client = createClient({ baseUrl: hostile.url });
    hostile.misbehave('/api/proofs/recent', 'malformed');
    await assert.rejects(client.recent(), rejectsWith('malformed_answer'));
    hostile.misbehave('/api/log/consistency', {
      fault: 'lie',
      answer: { headers: { 'content-type': 'application/json' }, body: '{"hashes":[42]}' },
    });
    await assert.rejects(client.consistency(1, 2), rejectsWith('malformed_answer'));
    hostile.misbehave('/api/proofs/recent', {
      fault: 'redirect',
      location: `${server.baseUrl}/api/proofs/recent`,
    });
    await assert.rejects(client.recent(), rejectsWith('redirected'));
    hostile.misbehave('/api/proofs/recent', undefined);
    hostile.misbehave('/api/log/consistency', undefined);
  });
});
