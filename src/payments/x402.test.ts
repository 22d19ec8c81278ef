import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, verify } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { readFileSync, writeFileSync } from 'node:fs';
import { createClient } from '../client/client.ts';
import {
  api,
  expectError,
  makeDataDir,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import {
  BASE_USDC,
  NETWORK,
  startChain,
  startFacilitator,
  type Chain,
  type Facilitator,
} from '../../test/x402-chain.ts';
import {
  NOTARIZE,
  payingFetch,
  postPaid as postPaidTo,
  proofsOf as proofsOfAt,
  signedPayment as signedPaymentFor,
} from '../../test/x402-client.ts';

const PRICE_UNITS = 5000n;

let chain: Chain;
let facilitator: Facilitator;
let server: TestServer;
let payTo: string;
let counter = 0;

function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  return {
    contentHash: sampleHash(1000 + counter),
    label: `paid proof ${counter}`,
    metadata: { run: counter },
    idempotencyKey: `paid-${counter}-${Date.now()}`,
    ...overrides,
  };
}

const signedPayment = (account: PrivateKeyAccount): Promise<string> =>
  signedPaymentFor(account, server.baseUrl);
const postPaid = (header: string, payload: unknown, target = server): Promise<Response> =>
  postPaidTo(target.baseUrl, header, payload);
const proofsOf = (contentHash: string, target = server): Promise<number> =>
  proofsOfAt(target.baseUrl, contentHash);

before(async () => {
  chain = await startChain();
  facilitator = await startFacilitator(chain);
  payTo = (await chain.fundedWallet(0n)).address;
  server = await startServer({
    env: {
      PAYMENT_MODE: 'x402',
      X402_PAY_TO: payTo,
      X402_FACILITATOR_URL: facilitator.url,
      X402_FACILITATOR_TIMEOUT_MS: '1500',
    },
  });
});

after(async () => {
  await server.close();
  server.cleanup();
  await facilitator.close();
});

describe('the 402 challenge', () => {
  test('an unpaid call gets 402 with the x402 v2 challenge in PAYMENT-REQUIRED and in the envelope', async () => {
    const res = await api(server.baseUrl, NOTARIZE, { method: 'POST', body: body() });
    expectError(res, 402, 'payment_required');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const header = res.headers.get('payment-required');
    assert.ok(header !== null && /^[A-Za-z0-9+/]+=*$/.test(header), 'standard base64');
    const challenge = decodePaymentRequiredHeader(header);
    assert.deepEqual(res.body.error.details, JSON.parse(JSON.stringify(challenge)));
    assert.equal(challenge.x402Version, 2);
    assert.equal(challenge.resource.url, server.baseUrl + NOTARIZE);
    assert.equal(challenge.accepts.length, 1);
    assert.deepEqual(challenge.accepts[0], {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '5000',
      asset: BASE_USDC,
      payTo,
      maxTimeoutSeconds: 300,
      extra: { name: 'USD Coin', version: '2' },
    });
    const bazaar = (challenge.extensions as Record<string, any>).bazaar;
    assert.equal(bazaar.info.input.method, 'POST');
    assert.equal(bazaar.info.input.bodyType, 'json');
    assert.equal(bazaar.schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
  });

  test('the challenge comes before the body is looked at: bad JSON, wrong type, no body all get 402', async () => {
    for (const init of [
      { rawBody: '{"truncated', headers: { 'content-type': 'application/json' } },
      { rawBody: 'hello', headers: { 'content-type': 'text/plain' } },
      {},
    ]) {
      const res = await api(server.baseUrl, NOTARIZE, { method: 'POST', ...init });
      expectError(res, 402, 'payment_required');
    }
  });

  test('a PAYMENT-SIGNATURE that is not a v2 payload is no payment: 402 again', async () => {
    for (const header of ['not base64 !', Buffer.from('{"x402Version":1}').toString('base64'), '']) {
      const res = await postPaid(header, body());
      assert.equal(res.status, 402);
      assert.ok(res.headers.get('payment-required'));
    }
  });

  test('a browser may read the challenge: CORS exposes PAYMENT-REQUIRED and allows PAYMENT-SIGNATURE', async () => {
    const preflight = await fetch(server.baseUrl + NOTARIZE, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,payment-signature',
      },
    });
    assert.equal(preflight.status, 204);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /PAYMENT-SIGNATURE/i);
    const res = await fetch(server.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { origin: 'https://app.example', 'content-type': 'application/json' },
      body: JSON.stringify(body()),
    });
    assert.equal(res.status, 402);
    const exposed = res.headers.get('access-control-expose-headers') ?? '';
    assert.match(exposed, /PAYMENT-REQUIRED/);
    assert.match(exposed, /PAYMENT-RESPONSE/);
  });
});

describe('paying with the official client on a local Base chain', () => {
  test('@x402/fetch pays 5000 units of USDC once and gets the proof with PAYMENT-RESPONSE', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const payerBefore = await chain.balanceOf(wallet.address);
    const payToBefore = await chain.balanceOf(payTo);
    const request = body();
    const res = await payingFetch(wallet)(server.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const json = (await res.json()) as any;
    assert.equal(res.status, 200, JSON.stringify(json));
    assert.equal(json.mode, 'x402');
    assert.equal(json.idempotentReplay, false);
    const receipt = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(receipt.success, true);
    assert.equal(receipt.network, NETWORK);
    assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);
    assert.equal(receipt.payer?.toLowerCase(), wallet.address.toLowerCase());
    assert.deepEqual(json.proof.payment, {
      network: NETWORK,
      payer: receipt.payer,
      transaction: receipt.transaction,
      amount: '5000',
    });
    assert.equal(await chain.balanceOf(wallet.address), payerBefore - PRICE_UNITS);
    assert.equal(await chain.balanceOf(payTo), payToBefore + PRICE_UNITS);
    // verify → create → settle: the proof (its time and signatures) was made before settlement began.
    assert.ok(
      Date.parse(json.proof.timestamp) <= facilitator.lastSettleAt,
      `proof at ${json.proof.timestamp}, settle at ${new Date(facilitator.lastSettleAt).toISOString()}`,
    );
    const onChain = await chain.client.getTransactionReceipt({ hash: receipt.transaction as `0x${string}` });
    assert.equal(onChain.status, 'success');

    const stored = await api(server.baseUrl, `/api/proofs/${json.proof.id}`);
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body.proof.payment, json.proof.payment);
    assert.equal(stored.body.proof.verified, true);
  });

  test('a paid replay of the same request returns the stored proof and charges nothing', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const request = body();
    const pay = payingFetch(wallet);
    const send = () =>
      pay(server.baseUrl + NOTARIZE, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      });
    const first = (await (await send()).json()) as any;
    const balance = await chain.balanceOf(wallet.address);
    const settles = facilitator.calls.settle;
    const again = await send();
    const json = (await again.json()) as any;
    assert.equal(again.status, 200);
    assert.equal(json.idempotentReplay, true);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(json.proof.id, first.proof.id);
    assert.equal(again.headers.get('payment-response'), null, 'nothing was settled');
    assert.equal(facilitator.calls.settle, settles);
    assert.equal(await chain.balanceOf(wallet.address), balance);

    const reused = await pay(server.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...request, label: 'other content' }),
    });
    assert.equal(reused.status, 422);
    assert.equal(((await reused.json()) as any).error.code, 'idempotency_key_reused');
    assert.equal(await chain.balanceOf(wallet.address), balance);
  });

  test('a paid request with an invalid body gets 400 and is not charged (the facilitator is not even asked)', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const calls = { ...facilitator.calls };
    const res = await postPaid(header, { contentHash: 'sha256:nothex', label: '', idempotencyKey: 'x' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as any).error.code, 'invalid_request');
    assert.deepEqual(facilitator.calls, calls);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n);
  });

  test('one payment buys one proof: a settled payload sent again is refused, and so is one sent twice at once', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const [a, b] = [body(), body()];
    const answers = await Promise.all([postPaid(header, a), postPaid(header, b)]);
    const statuses = answers.map((res) => res.status).sort();
    assert.deepEqual(statuses, [200, 402]);
    const refused = answers.find((res) => res.status === 402);
    assert.equal(((await refused?.json()) as any).error.code, 'payment_required');
    assert.equal((await proofsOf(a.contentHash as string)) + (await proofsOf(b.contentHash as string)), 1);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);

    const c = body();
    const later = await postPaid(header, c);
    assert.equal(later.status, 402, 'the nonce is spent on chain');
    assert.equal(await proofsOf(c.contentHash as string), 0);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);
  });

  test('a wallet without funds is refused at verification: 402 with the reason, no proof', async () => {
    const wallet = await chain.fundedWallet(0n);
    const header = await signedPayment(wallet);
    const request = body();
    const res = await postPaid(header, request);
    const json = (await res.json()) as any;
    assert.equal(res.status, 402);
    assert.equal(json.error.code, 'payment_required');
    assert.match(json.error.message, /not accepted/);
    const challenge = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
    assert.ok(challenge.error && challenge.error.length <= 160, challenge.error);
    assert.equal(await proofsOf(request.contentHash as string), 0);
  });

  test('a settlement that fails on chain: 402 with PAYMENT-RESPONSE success false, no proof, no charge', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const request = body();
    facilitator.behaviour = 'payer-blacklisted-before-settle';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, request);
    const json = (await res.json()) as any;
    assert.equal(res.status, 402);
    assert.equal(json.error.code, 'payment_required');
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(settlement.success, false);
    assert.ok((settlement.errorReason ?? '').length > 0 && (settlement.errorReason ?? '').length <= 160);
    assert.ok((settlement.errorMessage ?? '').length <= 160);
    assert.equal(json.error.details.settlement.success, false);
    assert.ok(res.headers.get('payment-required'), 'a fresh challenge to pay again');
    assert.equal(await proofsOf(request.contentHash as string), 0);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n);
  });
});

describe('paying from the client library and the command line', () => {
  test('createClient({ payer }) pays the challenge and retries safely without paying twice', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const client = createClient({ baseUrl: server.baseUrl, payer: wallet });
    const request = body();
    const made = await client.notarize(request as never);
    assert.equal(made.idempotentReplay, false);
    assert.equal(made.proof.payment?.payer.toLowerCase(), wallet.address.toLowerCase());
    const again = await client.notarize(request as never);
    assert.equal(again.idempotentReplay, true);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);
  });

  test('hashproof stamp pays with HASHPROOF_WALLET_KEY; a re-run pays nothing', async () => {
    const key = await chain.fundedPrivateKey(1_000_000n);
    const address = privateKeyToAccount(key).address;
    const dir = makeDataDir();
    const file = path.join(dir, 'report.txt');
    writeFileSync(file, `a paid report ${Date.now()}`);
    const cli = async (): Promise<{ code: number | null; stdout: string; stderr: string }> => {
      const child = spawn(
        process.execPath,
        [path.resolve(import.meta.dirname, '../cli/main.ts'), 'stamp', file, '--json'],
        {
          env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl, HASHPROOF_WALLET_KEY: key },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { code, stdout, stderr };
    };
    const first = await cli();
    assert.equal(first.code, 0, first.stderr);
    const proof = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')) as {
      proof: { payment: { payer: string } };
    };
    assert.equal(proof.proof.payment.payer.toLowerCase(), address.toLowerCase());
    assert.equal(await chain.balanceOf(address), 1_000_000n - PRICE_UNITS);
    const second = await cli();
    assert.equal(second.code, 0, second.stderr);
    assert.equal(await chain.balanceOf(address), 1_000_000n - PRICE_UNITS);
  });
});

describe('facilitator outages', () => {
  test('a facilitator answering 500 pages: 502 payment_unavailable, its text cut short', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    facilitator.behaviour = 'error-500';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, body());
    const json = (await res.json()) as any;
    assert.equal(res.status, 502);
    assert.equal(json.error.code, 'payment_unavailable');
    assert.equal(json.error.details.step, 'verify');
    assert.ok(json.error.details.reason.length <= 160);
    const page = 'upstream exploded '.repeat(200);
    assert.ok(JSON.stringify(json).length < page.length / 3, 'the facilitator page is not passed on');
  });

  test('a facilitator that does not answer verify: 502 after the configured timeout', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    facilitator.behaviour = 'hang';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, body());
    assert.equal(res.status, 502);
    const json = (await res.json()) as any;
    assert.equal(json.error.code, 'payment_unavailable');
    assert.match(json.error.message, /timed out/);
    assert.equal(res.headers.get('retry-after'), '5');
  });

  test('a settlement that is not confirmed in time is unknown, not failed; the same key meanwhile gets 409', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const [first, second] = [await signedPayment(wallet), await signedPayment(wallet)];
    const request = body();
    facilitator.behaviour = 'hang-settle';
    t.after(() => (facilitator.behaviour = 'real'));
    const settling = facilitator.settleStarted();
    const slow = postPaid(first, request);
    await settling;
    const waiting = await postPaid(second, request);
    assert.equal(waiting.status, 409);
    assert.equal(((await waiting.json()) as any).error.code, 'idempotency_key_in_use');
    assert.equal(waiting.headers.get('retry-after'), '1');
    const res = await slow;
    const json = (await res.json()) as any;
    assert.equal(res.status, 502);
    assert.equal(json.error.code, 'payment_unavailable');
    assert.equal(json.error.details.settlement, 'unknown');
    assert.equal(json.error.details.payer.toLowerCase(), wallet.address.toLowerCase());
    assert.equal(res.headers.get('payment-required'), null, 'not a plain 402 that invites paying again');
    assert.equal(await proofsOf(request.contentHash as string), 0);
  });
});

describe('x402 mode around the payment', () => {
  test('an API key with proofs:write creates proofs without payment; a wrong key is 401, never 402', async () => {
    const headers = { 'x-service-admin-key': 'test-admin-key-0123456789' };
    const admin = await startServer({
      env: {
        PAYMENT_MODE: 'x402',
        X402_PAY_TO: payTo,
        X402_FACILITATOR_URL: facilitator.url,
        SERVICE_ADMIN_KEY: 'test-admin-key-0123456789',
      },
    });
    try {
      const account = await api(admin.baseUrl, '/api/accounts', {
        method: 'POST',
        headers,
        body: { name: 'a' },
      });
      const key = await api(admin.baseUrl, `/api/accounts/${account.body.account.id}/api-keys`, {
        method: 'POST',
        headers,
        body: { scopes: ['proofs:write'] },
      });
      assert.equal(key.status, 201);
      const made = await api(admin.baseUrl, NOTARIZE, {
        method: 'POST',
        headers: { 'x-service-key': key.body.key },
        body: body(),
      });
      assert.equal(made.status, 200);
      assert.equal(made.body.mode, 'x402');
      assert.equal(made.body.proof.accountId, account.body.account.id);
      assert.equal(made.body.proof.payment, null);
      const wrong = await api(admin.baseUrl, NOTARIZE, {
        method: 'POST',
        headers: { 'x-service-key': 'hp_live_wrong' },
        body: body(),
      });
      expectError(wrong, 401, 'unauthorized');
      // RFC 3161 over HTTP is not paid per call: in x402 mode it needs the key instead.
      const query = Buffer.from(
        '3029020101302130090605' + '2b0e03021a0500' + '0414' + '00'.repeat(20),
        'hex',
      );
      const tsa = (headers: Record<string, string>) =>
        fetch(`${admin.baseUrl}/api/tsa`, {
          method: 'POST',
          headers: { 'content-type': 'application/timestamp-query', ...headers },
          body: query,
        });
      const anonymous = await tsa({});
      assert.equal(anonymous.status, 401);
      assert.equal(((await anonymous.json()) as any).error.code, 'unauthorized');
      const keyed = await tsa({ 'x-service-key': key.body.key });
      assert.equal(keyed.status, 200);
      assert.equal(keyed.headers.get('content-type'), 'application/timestamp-reply');
    } finally {
      await admin.close();
      admin.cleanup();
    }
  });

  test('/health reports the mode; the discovery documents list the paid route with the same terms', async () => {
    const health = await api(server.baseUrl, '/health');
    assert.equal(health.body.mode, 'x402');
    const challenge = decodePaymentRequiredHeader(
      (await api(server.baseUrl, NOTARIZE, { method: 'POST', body: body() })).headers.get(
        'payment-required',
      ) ?? '',
    );
    const wellKnown = await api(server.baseUrl, '/.well-known/x402');
    assert.equal(wellKnown.status, 200);
    assert.equal(wellKnown.body.version, 1);
    assert.deepEqual(wellKnown.body.resources, [server.baseUrl + NOTARIZE]);
    assert.deepEqual(wellKnown.body.items[0].accepts, challenge.accepts);
    const discovery = await api(server.baseUrl, '/api/discovery');
    assert.equal(discovery.status, 200);
    assert.equal(discovery.body.x402Version, 2);
    assert.deepEqual(discovery.body.pagination, { limit: 1, offset: 0, total: 1 });
    const item = discovery.body.items[0];
    assert.equal(item.resource, server.baseUrl + NOTARIZE);
    assert.equal(item.type, 'http');
    assert.deepEqual(item.accepts, challenge.accepts);
    assert.deepEqual(item.extensions, JSON.parse(JSON.stringify(challenge.extensions)));
  });

  test('/openapi.json marks the operation as paid: x-payment-info, a 402 response, the x402 scheme', async () => {
    const doc = (await api(server.baseUrl, '/openapi.json')).body;
    const operation = doc.paths[NOTARIZE].post;
    assert.deepEqual(operation['x-payment-info'].protocols, ['x402']);
    assert.deepEqual(operation['x-payment-info'].price, { mode: 'fixed', currency: 'USD', amount: '0.005' });
    assert.ok(operation.responses['402']);
    assert.deepEqual(operation.security, [{ x402: [] }, { apiKey: [] }]);
    assert.equal(doc.components.securitySchemes.x402.name, 'PAYMENT-SIGNATURE');
  });

  test('with a CDP API key every facilitator call carries a JWT signed by that key', async () => {
    // A CDP Ed25519 secret is base64 of the 32-byte seed followed by the 32-byte public key.
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
    const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    const cdp = await startServer({
      env: {
        PAYMENT_MODE: 'x402',
        X402_PAY_TO: payTo,
        X402_FACILITATOR_URL: facilitator.url,
        CDP_API_KEY_ID: 'organizations/test/apiKeys/hashproof',
        CDP_API_KEY_SECRET: Buffer.concat([seed, raw]).toString('base64'),
      },
    });
    try {
      // Start-up asked the facilitator what it supports, authenticated.
      const bearer = /^Bearer (.+)$/.exec(facilitator.lastAuthorization ?? '')?.[1];
      assert.ok(bearer, `no bearer token: ${facilitator.lastAuthorization}`);
      const [header, payload, signature] = bearer.split('.') as [string, string, string];
      assert.ok(
        verify(null, Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url')),
        'the JWT verifies with the CDP key',
      );
      assert.equal(JSON.parse(Buffer.from(header, 'base64url').toString()).alg, 'EdDSA');
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
      assert.equal(claims.sub, 'organizations/test/apiKeys/hashproof');
      assert.match(claims.uris[0], /^GET api\.cdp\.coinbase\.com\/platform\/v2\/x402\/supported$/);
      assert.ok(claims.exp > Date.now() / 1000, 'not expired');

      // A paid request is verified with a fresh token for /verify.
      facilitator.lastAuthorization = undefined;
      const wallet = await chain.fundedWallet(1_000_000n);
      const res = await payingFetch(wallet)(cdp.baseUrl + NOTARIZE, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body()),
      });
      assert.equal(res.status, 200);
      const last = /^Bearer (.+)$/.exec(facilitator.lastAuthorization ?? '')?.[1] ?? '';
      const lastClaims = JSON.parse(Buffer.from(last.split('.')[1] ?? '', 'base64url').toString());
      assert.match(lastClaims.uris[0], /^POST .*\/x402\/settle$/);
    } finally {
      await cdp.close();
      cdp.cleanup();
    }
  });

  test('a facilitator that does not support the network stops start-up with one clear line', async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const dataDir = makeDataDir();
    const child = spawn(process.execPath, ['src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        DATABASE_URL: `sqlite:${path.join(dataDir, 'db.sqlite')}`,
        SIGNING_KEYS_DIR: path.join(dataDir, 'keys'),
        PAYMENT_MODE: 'x402',
        X402_PAY_TO: payTo,
        X402_NETWORK: 'eip155:84532',
        X402_FACILITATOR_URL: facilitator.url,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 2);
    const lines = stderr.trim().split('\n');
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0] ?? '', /^hashproof: configuration: X402_FACILITATOR_URL: .*eip155:84532/);
  });
});
