import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminHeaders, api, expectError, notarizeBody } from '../../test/helper.ts';
import { deliveredProofId, startWebhookReceiver, type WebhookReceiver } from '../../test/webhook-receiver.ts';
import { eventually } from '../../test/wait.ts';
import { deliverMarkers, server, setUp, withWebhookServer } from './webhooks-test-setup.ts';

describe('webhooks', () => {
  let receiver: WebhookReceiver;
  withWebhookServer();

  test('registration returns the secret once; listings never show it', async () => {
    receiver = await startWebhookReceiver();
    try {
      const { admin, account, webhook, secret, created } = await setUp(server, receiver);
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.match(webhook.id, /^wh_/);
      assert.deepEqual(webhook.events, ['proof.created']);
      assert.equal(webhook.status, 'active');
      assert.equal(webhook.url, receiver.url);
      const list = await admin(`/api/accounts/${account.id}/webhooks`);
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.webhooks, [{ webhook, recentDeliveries: [] }]);
      assert.ok(!list.text.includes(secret));
      // Both requests are logged (their access lines are the last lines they write): then search.
      await server.requestLogged(created);
      await server.requestLogged(list);
      assert.ok(!server.logs.join('\n').includes(secret));
    } finally {
      await receiver.close();
    }
  });

  test('proof.created is delivered once per new proof, signed, and never for replays or anonymous proofs', async () => {
    receiver = await startWebhookReceiver();
    try {
      const { admin, account, key, webhook } = await setUp(server, receiver);
      const body = notarizeBody({ metadata: { build: 7 } });
      const created = await api(server.baseUrl, '/api/proof/notarize', {
        body,
        headers: { 'x-service-key': key },
      });
      assert.equal(created.status, 200);
      await api(server.baseUrl, '/api/proof/notarize', { body, headers: { 'x-service-key': key } });
      await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
      const [delivery] = await receiver.waitFor(1);
      assert.ok(delivery);
      assert.equal(delivery.verifyError, undefined);
      const event = delivery.verified as any;
      assert.equal(event.type, 'proof.created');
      assert.equal(event.id, delivery.headers['webhook-id']);
      assert.deepEqual(event.data.proof, created.body.proof);
      assert.equal(
        event.data.links.proof,
        `${server.ctx.config.publicBaseUrl}/proof/${created.body.proof.id}`,
      );
      assert.equal(event.timestamp, created.body.proof.timestamp);
      assert.ok(!delivery.body.includes('"build":7'), 'raw metadata is not sent');
      assert.match(String(delivery.headers['user-agent']), /^hashproof-webhooks\//);
      const [record] = await eventually(
        async () => (await admin(`/api/accounts/${account.id}/webhooks`)).body.webhooks[0].recentDeliveries,
        { what: 'the delivery is recorded', until: (recorded) => recorded.length === 1 },
      );
      assert.equal(record.webhookId, webhook.id);
      assert.equal(record.eventId, event.id);
      assert.equal(record.eventType, 'proof.created');
      assert.equal(record.attempt, 1);
      assert.equal(record.status, 'succeeded');
      assert.equal(record.responseStatus, 200);
      assert.equal(record.error, null);
      assert.equal(record.nextAttemptAt, null);
      assert.ok(record.durationMs >= 0);
      const markers = await deliverMarkers(server, key, receiver);
      assert.deepEqual(
        receiver.received.map(deliveredProofId),
        [created.body.proof.id, ...markers],
        'one event: the replay and the anonymous proof send none',
      );
    } finally {
      await receiver.close();
    }
  });

  test('POST /api/webhooks/{id}/test sends a signed webhook.test and records it', async () => {
    receiver = await startWebhookReceiver();
    try {
      const { admin, account, webhook } = await setUp(server, receiver);
      const res = await admin(`/api/webhooks/${webhook.id}/test`, {});
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.delivery.eventType, 'webhook.test');
      assert.equal(res.body.delivery.trigger, 'test');
      assert.equal(res.body.delivery.status, 'succeeded');
      assert.equal(res.body.delivery.responseStatus, 200);
      assert.equal(receiver.received.length, 1);
      const event = receiver.received[0]?.verified as any;
      assert.equal(event.type, 'webhook.test');
      assert.equal(event.data.webhook.id, webhook.id);
      const list = await admin(`/api/accounts/${account.id}/webhooks`);
      assert.deepEqual(list.body.webhooks[0].recentDeliveries, [res.body.delivery]);
      expectError(await admin('/api/webhooks/wh_missing/test', {}), 404, 'not_found');
    } finally {
      await receiver.close();
    }
  });

  test('a test to a receiver that is down is recorded as failed, not an error of the endpoint', async () => {
    receiver = await startWebhookReceiver();
    const { admin, webhook } = await setUp(server, receiver);
    await receiver.close();
    const res = await admin(`/api/webhooks/${webhook.id}/test`, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.delivery.status, 'failed');
    assert.equal(res.body.delivery.responseStatus, null);
    assert.equal(res.body.delivery.error, 'connection_failed');
  });

  test('a batch with an API key: one proof.created per new proof, none for replays or bad items', async () => {
    receiver = await startWebhookReceiver();
    try {
      const { key } = await setUp(server, receiver);
      const headers = { 'x-service-key': key };
      const known = notarizeBody();
      await api(server.baseUrl, '/api/proof/notarize', { body: known, headers });
      await receiver.waitFor(1);
      receiver.received.length = 0;
      const fresh = [notarizeBody(), notarizeBody(), notarizeBody()];
      const res = await api(server.baseUrl, '/api/proof/batch', {
        body: { items: [fresh[0], known, fresh[1], { label: 'no hash' }, fresh[2], fresh[0]] },
        headers,
      });
      assert.equal(res.status, 200, res.text);
      const made = res.body.items.filter((item: any) => item.ok && !item.idempotentReplay);
      assert.equal(made.length, 3);
      // Billed to the account, proof by proof.
      for (const item of made) assert.equal(item.proof.accountId, res.body.items[0].proof.accountId);
      assert.notEqual(res.body.items[0].proof.accountId, null);
      const markers = await deliverMarkers(server, key, receiver);
      assert.deepEqual(
        receiver.received.map(deliveredProofId).sort(),
        [...made.map((item: any) => item.proof.id), ...markers].sort(),
      );
    } finally {
      await receiver.close();
    }
  });

  test('webhook bodies are validated', async () => {
    const admin = (path: string, body: unknown) => api(server.baseUrl, path, { body, headers: adminHeaders });
    const account = (await admin('/api/accounts', {})).body.account;
    for (const body of [
      {},
      { url: 'not a url' },
      { url: 'ftp://x.example/' },
      { url: 'https://a.example/', events: ['proof.deleted'] },
      { url: 'https://a.example/', events: [] },
      { url: 'https://user:pw@a.example/' },
    ]) {
      expectError(await admin(`/api/accounts/${account.id}/webhooks`, body), 400, 'invalid_request');
    }
  });
});
