import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, verify } from 'node:crypto';
import path from 'node:path';
import { describe, test } from 'node:test';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { api, expectError, makeDataDir, startServer } from '../../test/helper.ts';
import { BASE_USDC } from '../../test/x402-chain.ts';
import { NOTARIZE, payingFetch } from '../../test/x402-client.ts';

const BATCH = '/api/proof/batch';
import { formatCheckpoint, signNote } from '../core/signed-note.ts';
import { LogStateFiles } from '../log/log-state.ts';
import {
  body,
  chain,
  facilitator,
  payTo,
  postPaid,
  server,
  signedPayment,
  withX402Service,
} from './x402-test-setup.ts';

withX402Service();

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
      // A batch with the key: no payment asked, each proof billed to the account.
      const batch = await api(admin.baseUrl, '/api/proof/batch', {
        method: 'POST',
        headers: { 'x-service-key': key.body.key },
        body: { items: [body(), body()] },
      });
      assert.equal(batch.status, 200, batch.text);
      for (const item of batch.body.items) {
        assert.equal(item.proof.accountId, account.body.account.id);
        assert.equal(item.proof.payment, null);
      }
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
    assert.deepEqual(wellKnown.body.resources, [server.baseUrl + NOTARIZE, server.baseUrl + BATCH]);
    assert.deepEqual(wellKnown.body.items[0].accepts, challenge.accepts);
    const discovery = await api(server.baseUrl, '/api/discovery');
    assert.equal(discovery.status, 200);
    assert.equal(discovery.body.x402Version, 2);
    assert.deepEqual(discovery.body.pagination, { limit: 3, offset: 0, total: 3 });
    const item = discovery.body.items[0];
    assert.equal(item.resource, server.baseUrl + NOTARIZE);
    assert.equal(item.type, 'http');
    assert.deepEqual(item.accepts, challenge.accepts);
    assert.deepEqual(item.extensions, JSON.parse(JSON.stringify(challenge.extensions)));
    // The batch: its terms for one item are the same price; its challenge multiplies it.
    const batch = discovery.body.items[1];
    assert.equal(batch.resource, server.baseUrl + BATCH);
    assert.equal(batch.accepts[0].amount, challenge.accepts[0]?.amount);
    assert.equal(batch.accepts[0].payTo, challenge.accepts[0]?.payTo);
    assert.ok(batch.extensions.bazaar, 'the batch route is described for directories');
    // The MCP tool: the same terms, described as an MCP tool for directories.
    const tool = discovery.body.items[2];
    assert.equal(tool.resource, 'mcp://tool/notarize');
    assert.equal(tool.type, 'mcp');
    assert.equal(tool.toolName, 'notarize');
    assert.equal(tool.endpoint, `${server.ctx.config.publicBaseUrl}/mcp`);
    assert.deepEqual(tool.accepts, challenge.accepts);
    assert.equal(tool.extensions.bazaar.info.input.type, 'mcp');
    assert.equal(tool.extensions.bazaar.info.input.toolName, 'notarize');
    assert.deepEqual(wellKnown.body.items[2], tool);
  });

  test('/openapi.json marks the operation as paid: x-payment-info, a 402 response, the x402 scheme', async () => {
    const doc = (await api(server.baseUrl, '/openapi.json')).body;
    const operation = doc.paths[NOTARIZE].post;
    assert.deepEqual(operation['x-payment-info'].protocols, ['x402']);
    assert.deepEqual(operation['x-payment-info'].price, { mode: 'fixed', currency: 'USD', amount: '0.005' });
    assert.ok(operation.responses['402']);
    assert.deepEqual(operation.security, [{ x402: [] }, { apiKey: [] }]);
    assert.equal(doc.components.securitySchemes.x402.name, 'PAYMENT-SIGNATURE');
    const batch = doc.paths[BATCH].post;
    assert.deepEqual(batch['x-payment-info'].price, {
      mode: 'per_item',
      currency: 'USD',
      amount: '0.005',
      unit: 'proof',
    });
    assert.ok(batch.responses['402']);
    assert.deepEqual(batch.security, [{ x402: [] }, { apiKey: [] }]);
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

  test('a stopped log refuses new proofs with 503 before any challenge: nobody is asked to pay', async () => {
    const env = { PAYMENT_MODE: 'x402', X402_PAY_TO: payTo, X402_FACILITATOR_URL: facilitator.url };
    let stopped = await startServer({ env });
    const { dataDir } = stopped;
    try {
      // The record says the log published a tree of 5 entries; this database holds none.
      const { origin, verifierKey } = stopped.ctx.log;
      const { privateKey, publicKey } = stopped.ctx.keyring.logKey;
      await stopped.close();
      const rootHash = Buffer.alloc(32, 7);
      const note = signNote(
        formatCheckpoint({ origin, size: 5, rootHash, extensions: [] }),
        origin,
        privateKey,
        publicKey,
      );
      await new LogStateFiles(path.join(dataDir, 'keys'), origin, verifierKey).write({
        treeSize: 5,
        rootHash,
        checkpoint: note,
      });
      stopped = await startServer({ dataDir, env });
      const calls = { ...facilitator.calls };
      const unpaid = await api(stopped.baseUrl, NOTARIZE, { method: 'POST', body: body() });
      expectError(unpaid, 503, 'service_unavailable');
      assert.equal(unpaid.headers.get('payment-required'), null);
      const paid = await postPaid(await signedPayment(await chain.fundedWallet(1_000_000n)), body(), stopped);
      assert.equal(paid.status, 503, await paid.text());
      assert.deepEqual(
        facilitator.calls,
        { ...calls, supported: facilitator.calls.supported },
        'no verify, no settle',
      );
    } finally {
      await stopped.close();
      stopped.cleanup();
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
