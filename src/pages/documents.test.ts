import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import {
  api,
  isPostgres,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { createProof, getPage, X402_ENV, x402Env, XSS_LABEL } from '../../test/pages.ts';

const BASE = 'https://proofs.example.com';
const DAY_MS = 86_400_000;

/** A clock the test moves: proofs can be created "yesterday" and "last week". */
const clock = { nowMs: Date.UTC(2026, 10, 22, 15, 30), now: () => clock.nowMs };

describe('JSON documents in demo mode', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ clock, env: { PUBLIC_BASE_URL: BASE, RATE_LIMIT_MAX: '500' } });
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('/api/capabilities describes the service from its configuration and its OpenAPI document', async () => {
    const res = await api(server.baseUrl, '/api/capabilities');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = res.body;
    assert.equal(body.service, 'hashproof');
    assert.equal(body.version, '0.2.1');
    assert.equal(body.baseUrl, BASE);
    assert.equal(body.mode, 'demo');
    assert.deepEqual(body.payment.required, false);
    assert.equal(body.payment.price, null);
    assert.equal(body.proof.activeKeyId, server.ctx.keyring.active.keyId);
    assert.deepEqual(body.proof.signedFields, [
      'contentHash',
      'id',
      'label',
      'metadataHash',
      'timestamp',
      'v',
    ]);
    assert.deepEqual(body.limits.rateLimit, { max: 500, windowSeconds: 60 });
    assert.equal(body.limits.labelMaxLength, 120);
    assert.equal(body.limits.bodyMaxBytes, 131072);
    const operations = body.operations.map((op: any) => `${op.method} ${op.path}`);
    for (const op of [
      'POST /api/proof/notarize',
      'POST /api/proof/batch',
      'GET /api/verify/proofs/{id}',
      'GET /api/capabilities',
    ]) {
      assert.ok(operations.includes(op), op);
    }
    assert.ok(!operations.includes('GET /dashboard'), 'HTML pages are not API operations');
    assert.deepEqual(
      body.authentication.map((a: any) => a.header),
      ['X-Service-Admin-Key', 'X-Service-Key'],
    );
    assert.equal(body.documents.openapi, `${BASE}/openapi.json`);
    // The MCP servers' configuration, on PUBLIC_BASE_URL (mcp-setup.test.ts uses it).
    assert.deepEqual(body.mcp.remote.configuration, {
      mcpServers: { hashproof: { type: 'http', url: `${BASE}/mcp` } },
    });
    const local = body.mcp.local.configuration.mcpServers.hashproof;
    assert.deepEqual(local.args.slice(1), ['mcp'], 'the entry runs `hashproof mcp`');
    assert.match(local.args[0], /\/src\/cli\/main\.ts$/);
    assert.deepEqual(local.env, { HASHPROOF_URL: BASE });
  });

  test('/api/quickstart gives working steps with absolute URLs and a real example hash', async () => {
    const { body } = await api(server.baseUrl, '/api/quickstart');
    assert.equal(body.ok, true);
    assert.equal(body.steps.length, 6);
    const create = body.steps.find((s: any) => s.method === 'POST');
    assert.equal(create.url, `${BASE}/api/proof/notarize`);
    assert.equal(
      create.body.contentHash,
      `sha256:${createHash('sha256').update('hello world').digest('hex')}`,
    );
    // The example request is accepted as it is.
    const made = await api(server.baseUrl, '/api/proof/notarize', { body: create.body });
    assert.equal(made.status, 200, made.text);
    assert.match(body.steps[1].description, /demo mode/);
    // The batch step's example is accepted as it is, and answers the same proof as a replay.
    const many = body.steps.find((s: any) => s.url === `${BASE}/api/proof/batch`);
    const batch = await api(server.baseUrl, '/api/proof/batch', { body: many.body });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(batch.body.items[0].proof.id, made.body.proof.id);
    assert.equal(batch.body.items[0].idempotentReplay, true);
    // The same MCP configuration as /api/capabilities, described in the OpenAPI document.
    assert.deepEqual(body.mcp, (await api(server.baseUrl, '/api/capabilities')).body.mcp);
    assert.equal(body.mcp.remote.url, `${BASE}/mcp`);
    const openapi = (await api(server.baseUrl, '/openapi.json')).body;
    const schema = openapi.paths['/api/quickstart'].get.responses['200'].content['application/json'].schema;
    assert.match(schema.properties.mcp.description, /mcpServers/);
    assert.deepEqual(Object.keys(schema.properties.mcp.properties), ['remote', 'local', 'page']);
  });

  test('/api/actions holds templates whose examples satisfy their own input schemas', async () => {
    const proof = await createProof(server);
    const { body } = await api(server.baseUrl, '/api/actions');
    const ajv = new Ajv2020({ strict: false });
    const names = body.actions.map((a: any) => a.name);
    assert.deepEqual(names, [
      'create_proof',
      'create_proofs',
      'verify_proof',
      'get_proof',
      'search_proofs',
      'list_recent_proofs',
    ]);
    for (const action of body.actions) {
      assert.ok(ajv.validate(action.inputSchema, action.example), `${action.name}: ${ajv.errorsText()}`);
      assert.ok(action.urlTemplate.startsWith(BASE), action.name);
    }
    const verify = body.actions.find((a: any) => a.name === 'verify_proof');
    assert.equal(verify.example.id, proof.id, 'the example reads the newest real proof');
    const url = verify.urlTemplate.replace('{id}', verify.example.id).replace(BASE, server.baseUrl);
    assert.equal((await fetch(url)).status, 200);
    const search = body.actions.find((a: any) => a.name === 'search_proofs');
    assert.equal(
      search.urlTemplate,
      `${BASE}/api/proofs/search{?q,contentHash,metadataHash,accountId,idempotencyKey,limit,cursor}`,
    );
  });

  test('/api/trust and /api/status reflect the live service', async () => {
    const before = await api(server.baseUrl, '/api/trust');
    await createProof(server);
    const trust = (await api(server.baseUrl, '/api/trust')).body;
    assert.equal(trust.proofs.total, before.body.proofs.total + 1);
    assert.equal(trust.security.contact, null, 'no SECURITY_CONTACT: no contact made up');
    assert.deepEqual(
      trust.signing.keys.map((k: any) => k.keyId),
      [server.ctx.keyring.active.keyId],
    );
    assert.equal(trust.dataHandling.storesContent, false);
    assert.ok(trust.dataHandling.publishedFields.includes('metadataKeys'));

    const status = (await api(server.baseUrl, '/api/status')).body;
    assert.equal(status.status, 'operational');
    assert.deepEqual(status.launch.stage, 'demo');
    assert.equal(status.proofs.total, trust.proofs.total);
    assert.deepEqual(status.components.database, { engine: isPostgres() ? 'postgres' : 'sqlite', ok: true });
    assert.equal(status.time, new Date(clock.nowMs).toISOString());

    const ping = server.ctx.database.ping.bind(server.ctx.database);
    server.ctx.database.ping = async () => {
      throw new Error('database is gone');
    };
    try {
      const degraded = await api(server.baseUrl, '/api/status');
      assert.equal(degraded.status, 200);
      assert.equal(degraded.body.status, 'degraded');
      assert.equal(degraded.body.components.database.ok, false);
      assert.equal(degraded.body.proofs.total, null);
    } finally {
      server.ctx.database.ping = ping;
    }
  });

  test('/marketplace.json lists the proof action as free in demo mode, with the free reads', async () => {
    const { body, headers } = await api(server.baseUrl, '/marketplace.json');
    assert.match(headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(body.provider.url, BASE);
    assert.deepEqual(
      body.listings.map((l: any) => [l.id, l.pricing.model]),
      [
        ['hashproof.notarize', 'free'],
        ['hashproof.verify', 'free'],
        ['hashproof.search', 'free'],
      ],
    );
  });
});

describe('dashboard', () => {
  let server: TestServer;
  before(async () => (server = await startServer({ clock, env: { PUBLIC_BASE_URL: BASE } })));
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('counts proofs today, this week and in total, by created_via, per day, and lists the newest', async () => {
    const today = Date.UTC(2026, 10, 22, 9);
    const at = async (ms: number, make: () => Promise<unknown>) => {
      clock.nowMs = ms;
      await make();
    };
    await at(today - 10 * DAY_MS, () => createProof(server));
    await at(today - 3 * DAY_MS, () => createProof(server));
    await at(today - DAY_MS, () => createProof(server));
    await at(today, () => createProof(server, { label: XSS_LABEL }));
    await at(today + 3_600_000, () =>
      server.ctx.proofs.notarize(notarizeBody({ contentHash: sampleHash(77) }) as any, {
        kind: 'account',
        accountId: 'acct_test',
      }),
    );
    await at(today + 7_200_000, () =>
      server.ctx.proofs.notarize(
        notarizeBody() as any,
        { kind: 'payer', network: 'eip155:8453', payer: '0x' + '1'.repeat(40) },
        {
          payment: {
            authorization: {
              network: 'eip155:8453',
              payer: '0x' + '1'.repeat(40),
              nonce: '0x' + '2'.repeat(64),
              payloadDigest: 'd'.repeat(64),
              validBeforeMs: today + 7_200_000 + 300_000,
            },
            verify: async () => ({
              settle: async () => ({
                record: {
                  network: 'eip155:8453',
                  payer: '0x' + '1'.repeat(40),
                  transaction: '0x' + 'f'.repeat(64),
                  amount: '5000',
                },
                response: 'receipt',
              }),
            }),
          },
        },
      ),
    );
    clock.nowMs = today + 8 * 3_600_000;

    const res = await api(server.baseUrl, '/api/dashboard/summary');
    assert.equal(res.status, 200);
    const { proofs, daily, recent } = res.body;
    assert.deepEqual(proofs.byCreatedVia, { demo: 4, x402: 1, api_key: 1 });
    assert.equal(proofs.total, 6);
    assert.equal(proofs.today, 3);
    assert.equal(proofs.last7Days, 5);
    assert.equal(daily.length, 14);
    assert.deepEqual(daily.at(-1), { date: '2026-11-22', count: 3 });
    assert.deepEqual(daily.at(-2), { date: '2026-11-21', count: 1 });
    assert.deepEqual(daily.at(-4), { date: '2026-11-19', count: 1 });
    assert.deepEqual(
      daily.find((d: any) => d.date === '2026-11-12'),
      { date: '2026-11-12', count: 1 },
    );
    assert.equal(recent.length, 6);
    assert.equal(recent[0].createdVia, 'x402');
    assert.equal(recent[0].url, `${BASE}/proof/${recent[0].id}`);
    assert.equal(res.body.generatedAt, new Date(clock.nowMs).toISOString());

    const page = await getPage(server, '/dashboard');
    assert.match(page, /<span class="stat-value">3<\/span><span class="stat-label">proofs today/);
    assert.match(page, /<span class="stat-value">5<\/span><span class="stat-label">in the last 7 days/);
    assert.match(page, /<span class="stat-value">6<\/span><span class="stat-label">in total/);
    assert.match(page, /<title>2026-11-22: 3 proofs<\/title>/);
    assert.match(
      page,
      /Paid with x402 <code>x402<\/code><\/td>\s?<td class="num">1<\/td>\s?<td class="num">17%<\/td>/,
    );
  });

  test('/.well-known/x402 and /api/discovery answer in demo mode and list no paid resource', async () => {
    const wellKnown = await api(server.baseUrl, '/.well-known/x402');
    assert.equal(wellKnown.status, 200);
    assert.equal(wellKnown.body.version, 1);
    assert.equal(wellKnown.body.mode, 'demo');
    assert.deepEqual(wellKnown.body.resources, []);
    assert.match(wellKnown.body.instructions, /demo mode/);
    const discovery = await api(server.baseUrl, '/api/discovery');
    assert.equal(discovery.status, 200);
    assert.deepEqual(discovery.body, {
      x402Version: 2,
      mode: 'demo',
      items: [],
      pagination: { limit: 0, offset: 0, total: 0 },
    });
  });
});

describe('JSON documents in x402 mode', () => {
  let server: TestServer;
  before(async () => (server = await startServer({ env: { ...(await x402Env()), PUBLIC_BASE_URL: BASE } })));
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('the discovery documents name the paid route under PUBLIC_BASE_URL, at the configured price', async () => {
    const wellKnown = (await api(server.baseUrl, '/.well-known/x402')).body;
    assert.deepEqual(wellKnown.resources, [`${BASE}/api/proof/notarize`, `${BASE}/api/proof/batch`]);
    assert.equal(wellKnown.items[0].accepts[0].amount, '7000');
    assert.equal(wellKnown.items[0].accepts[0].payTo, X402_ENV.X402_PAY_TO);
    const discovery = (await api(server.baseUrl, '/api/discovery')).body;
    assert.equal(discovery.items[0].resource, `${BASE}/api/proof/notarize`);
    assert.equal(discovery.items[0].extensions.bazaar.info.input.method, 'POST');
  });

  test('state the configured x402 terms', async () => {
    const capabilities = (await api(server.baseUrl, '/api/capabilities')).body;
    assert.deepEqual(capabilities.payment, {
      mode: 'x402',
      required: true,
      price: '$0.007',
      amount: '0.007',
      currency: 'USD',
      protocol: 'x402',
      x402Version: 2,
      scheme: 'exact',
      network: 'eip155:8453',
      networkName: 'Base',
      payTo: X402_ENV.X402_PAY_TO,
      discoveryUrl: `${BASE}/.well-known/x402`,
    });
    const notarize = capabilities.operations.find((op: any) => op.path === '/api/proof/notarize');
    assert.equal(notarize.paid, true);
    const marketplace = (await api(server.baseUrl, '/marketplace.json')).body;
    assert.deepEqual(marketplace.listings[0].pricing, {
      model: 'fixed',
      price: '$0.007',
      amount: '0.007',
      currency: 'USD',
      protocol: 'x402',
      x402Version: 2,
      scheme: 'exact',
      network: 'eip155:8453',
      payTo: X402_ENV.X402_PAY_TO,
    });
    const actions = (await api(server.baseUrl, '/api/actions')).body;
    assert.equal(actions.actions[0].paid, true);
    assert.equal(actions.actions[0].price, '$0.007');
    const status = (await api(server.baseUrl, '/api/status')).body;
    assert.equal(status.launch.stage, 'live');
    assert.match(status.launch.description, /\$0\.007/);
    const quickstart = (await api(server.baseUrl, '/api/quickstart')).body;
    assert.match(quickstart.steps[1].description, /402/);
  });
});
