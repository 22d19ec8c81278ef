import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { LookupFunction } from 'node:net';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  expectError,
  notarizeBody,
  recordedAttempts,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { startWebhookReceiver } from '../../test/webhook-receiver.ts';
import { createWebhookSender } from './webhook-sender.ts';

/** IPv6 forms that lead to loopback or private IPv4 (or are refused whatever they carry), as URLs. */
const EMBEDDED_IPV4_URLS = [
  'https://[::127.0.0.1]/hook', // IPv4-compatible (the URL parser writes it ::7f00:1)
  'https://[::a00:1]/hook', // IPv4-compatible 10.0.0.1
  'https://[::8.8.8.8]/hook', // IPv4-compatible, refused whatever it carries
  'https://[::ffff:0:127.0.0.1]/hook', // IPv4-translated
  'https://[64:ff9b::127.0.0.1]/hook', // NAT64 of loopback
  'https://[64:ff9b::169.254.169.254]/hook', // NAT64 of the metadata address
  'https://[64:ff9b:1::7f00:1]/hook', // local-use NAT64
  'https://[2002:7f00:1::1]/hook', // 6to4
  'https://[2001:0:7f00:1::1]/hook', // Teredo
  'https://[fec0::1]/hook', // site-local
];

describe('SSRF protection (WEBHOOK_ALLOW_PRIVATE_URLS unset)', () => {
  let server: TestServer;
  before(async () => (server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY } })));
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('http:, private, loopback, link-local and metadata destinations are refused with a clear 400', async () => {
    const admin = (path: string, body: unknown) => api(server.baseUrl, path, { body, headers: adminHeaders });
    const account = (await admin('/api/accounts', {})).body.account;
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://192.168.0.1/hook',
      'https://172.16.5.5/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://[fd00::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://0.0.0.0/hook',
      'https://localhost/hook',
      ...EMBEDDED_IPV4_URLS,
    ]) {
      const res = await admin(`/api/accounts/${account.id}/webhooks`, { url });
      const error = expectError(res, 400, 'invalid_request');
      assert.equal(error.details.errors[0].path, '/url', url);
      assert.match(error.message, /\/url/);
    }
  });

  test('an IPv6 address is judged by the IPv4 address it leads to where that is the rule (mapped, NAT64)', async () => {
    const admin = (path: string, body: unknown) => api(server.baseUrl, path, { body, headers: adminHeaders });
    const account = (await admin('/api/accounts', {})).body.account;
    for (const url of [
      'https://[2606:4700::1111]/hook',
      'https://[::ffff:8.8.8.8]/hook',
      'https://[64:ff9b::8.8.8.8]/hook',
    ]) {
      const res = await admin(`/api/accounts/${account.id}/webhooks`, { url });
      assert.equal(res.status, 201, `${url}: ${res.text}`);
    }
  });

  /**
   * Registers a webhook at a public address, then points its stored URL at `url` (what the DNS of a
   * registered name may do later), creates a proof, and returns the first delivery attempt recorded.
   */
  async function deliverAfterRebinding(url: string): Promise<any> {
    const admin = (path: string, body: unknown) => api(server.baseUrl, path, { body, headers: adminHeaders });
    const account = (await admin('/api/accounts', {})).body.account;
    const key = (await admin(`/api/accounts/${account.id}/api-keys`, {})).body.key;
    const created = await admin(`/api/accounts/${account.id}/webhooks`, {
      url: 'https://93.184.215.14/hook',
    });
    assert.equal(created.status, 201, created.text);
    await server.ctx.database.db
      .updateTable('webhooks')
      .set({ url })
      .where('id', '=', created.body.webhook.id)
      .execute();
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody(),
      headers: { 'x-service-key': key },
    });
    assert.equal(res.status, 200);
    return (await recordedAttempts(server.baseUrl, account.id, 1))[0];
  }

  test('the address is checked again at delivery time: a target that turned private gets nothing', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const delivery = await deliverAfterRebinding(receiver.url);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.error, 'blocked_address');
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });

  test('a host name that resolves to a private address at delivery time is refused (DNS rebinding)', async () => {
    const receiver = await startWebhookReceiver();
    try {
      // localhost, resolved for real at each attempt, as a name that turned private would be.
      const rebound = receiver.url.replace('127.0.0.1', 'localhost');
      // Without the check, that name does reach the receiver: the refusal below is the check's doing.
      const unchecked = createWebhookSender({ timeoutMs: 2000, allowPrivate: true });
      const reached = await unchecked({ url: rebound, headers: {}, body: '{}' });
      assert.equal(reached.responseStatus, 200);
      assert.equal(receiver.received.length, 1);

      const delivery = await deliverAfterRebinding(rebound);
      assert.equal(delivery.status, 'failed');
      assert.equal(delivery.responseStatus, null);
      assert.equal(delivery.error, 'blocked_address');
      assert.equal(receiver.received.length, 1, 'the service sent it nothing');
    } finally {
      await receiver.close();
    }
  });

  test('a stored URL of any IPv6 form that leads to a private IPv4 address gets nothing at delivery time', async () => {
    for (const url of EMBEDDED_IPV4_URLS) {
      const delivery = await deliverAfterRebinding(url);
      assert.equal(delivery.status, 'failed', url);
      assert.equal(delivery.responseStatus, null, url);
      assert.equal(delivery.error, 'blocked_address', url);
    }
  });

  test('a host name whose DNS answer is such an address, or holds one among public ones, is refused at connect time', async () => {
    const answers: string[][] = [
      ['::127.0.0.1'], // IPv4-compatible, as DNS answers print it
      ['::7f00:1'],
      ['64:ff9b:1::a00:1'],
      ['64:ff9b::a9fe:a9fe'],
      ['::ffff:0:a00:1'],
      ['2002:a00:1::1'],
      ['2001:0:a00:1::1'],
      ['2606:4700::1111', '::7f00:1'],
      ['8.8.8.8', '::ffff:127.0.0.1'],
    ];
    for (const addresses of answers) {
      const asked: string[] = [];
      const lookup = ((hostname: string, _options: unknown, callback: (...args: unknown[]) => void) => {
        asked.push(hostname);
        const found = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
        process.nextTick(() => callback(null, found));
      }) as LookupFunction;
      const send = createWebhookSender({ timeoutMs: 2000, allowPrivate: false, lookup });
      const result = await send({ url: 'https://hooks.example.net/hook', headers: {}, body: '{}' });
      assert.deepEqual(asked, ['hooks.example.net'], 'the name was looked up');
      assert.equal(result.responseStatus, null);
      assert.equal(result.error, 'blocked_address', addresses.join(', '));
    }
  });
});
