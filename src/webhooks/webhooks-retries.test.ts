import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, makeDataDir, notarizeBody, recordedAttempts, startServer } from '../../test/helper.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../test/webhook-receiver.ts';
import { eventually } from '../../test/wait.ts';
import { deliverMarkers, ENV, FAST, server, setUp, withWebhookServer } from './webhooks-test-setup.ts';

describe('webhooks', () => {
  let receiver: WebhookReceiver;
  withWebhookServer();

  test('a receiver that answers 500 twice then 200 gets three recorded attempts and one success', async () => {
    receiver = await startWebhookReceiver();
    try {
      const { account, key } = await setUp(server, receiver);
      receiver.respondWith([500, 500]);
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': key },
      });
      const received = await receiver.waitFor(3);
      assert.equal(
        new Set(received.map((r) => r.headers['webhook-id'])).size,
        1,
        'the same event id on every retry',
      );
      assert.ok(received.every((r) => r.verifyError === undefined));
      const byAttempt = await recordedAttempts(server.baseUrl, account.id, 3);
      assert.deepEqual(
        byAttempt.map((d) => [d.attempt, d.status, d.responseStatus, d.error]),
        [
          [1, 'failed', 500, 'http_500'],
          [2, 'failed', 500, 'http_500'],
          [3, 'succeeded', 200, null],
        ],
      );
      assert.ok(byAttempt[0].nextAttemptAt !== null && byAttempt[2].nextAttemptAt === null);
      assert.equal(byAttempt[0].responseExcerpt, 'failure from the receiver');
    } finally {
      await receiver.close();
    }
  });

  test('a redirect is a failed attempt; its target is never contacted, on any retry', async () => {
    receiver = await startWebhookReceiver();
    // Where the redirects point: a loopback address, which the sender must not reach on a receiver's say-so.
    const target = await startWebhookReceiver();
    try {
      const { account, key } = await setUp(server, receiver);
      const headers = { location: `${target.url}?via=redirect` };
      receiver.respondWith([301, 302, 307, 308].map((status) => ({ status, headers })));
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': key },
      });
      await receiver.waitFor(4);
      const byAttempt = await recordedAttempts(server.baseUrl, account.id, 4);
      assert.deepEqual(
        byAttempt.map((d) => [d.attempt, d.status, d.responseStatus, d.error]),
        [
          [1, 'failed', 301, 'http_301'],
          [2, 'failed', 302, 'http_302'],
          [3, 'failed', 307, 'http_307'],
          [4, 'failed', 308, 'http_308'],
        ],
      );
      assert.equal(byAttempt[3].nextAttemptAt, null, 'the last scheduled attempt failed: no more');
      // Recorded with no next attempt, the task is finished: nothing sends it again. Each redirect was
      // answered (and not followed) before its attempt was recorded.
      assert.equal(receiver.received.length, 4);
      assert.equal(target.received.length, 0, 'the redirect target got no request');
    } finally {
      await receiver.close();
      await target.close();
    }
  });

  test('a receiver that hangs is timed out and retried, without holding up another receiver', async () => {
    const hanging = await startWebhookReceiver();
    const healthy = await startWebhookReceiver();
    const quick = await startServer({ env: ENV, ...FAST, webhookTimeoutMs: 300 });
    try {
      const { admin, account, key } = await setUp(quick, hanging);
      const other = await admin(`/api/accounts/${account.id}/webhooks`, {
        url: healthy.url,
        name: 'healthy',
      });
      healthy.setSecret(other.body.secret);
      hanging.respondWith([0, 0, 0, 0, 0]);
      const started = Date.now();
      for (let i = 0; i < 3; i++) {
        const made = await api(quick.baseUrl, '/api/proof/notarize', {
          method: 'POST',
          body: notarizeBody(),
          headers: { 'x-service-key': key },
        });
        assert.equal(made.status, 200);
      }
      await healthy.waitFor(3, 5_000);
      assert.ok(healthy.received.every((r) => r.verifyError === undefined));
      await hanging.waitFor(4, 10_000); // three first attempts and at least one retry
      const failures = await eventually(
        async () => {
          const hooks = (await admin(`/api/accounts/${account.id}/webhooks`)).body.webhooks as any[];
          const stuck = hooks.find((h) => h.webhook.name === 'sink');
          return stuck.recentDeliveries.filter((d: any) => d.status === 'failed') as any[];
        },
        { what: 'three failed attempts recorded', until: (failed) => failed.length >= 3 },
      );
      assert.ok(
        failures.every((d) => d.responseStatus === null && /timeout|timed out/i.test(String(d.error))),
        JSON.stringify(failures[0]),
      );
      assert.ok(Date.now() - started < 15_000);
    } finally {
      await quick.close();
      quick.cleanup();
      await hanging.close();
      await healthy.close();
    }
  });

  test('after the last scheduled retry the delivery is failed; a 410 disables the webhook', async () => {
    receiver = await startWebhookReceiver();
    const other = await startWebhookReceiver();
    try {
      const { admin, account, key } = await setUp(server, receiver);
      receiver.respondWith([503, 503, 503, 503]);
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': key },
      });
      await receiver.waitFor(4);
      const deliveries = await recordedAttempts(server.baseUrl, account.id, 4);
      // The last attempt is recorded with no next one: the task is finished, nothing sends it again.
      assert.deepEqual(deliveries.map((d) => d.nextAttemptAt === null).sort(), [false, false, false, true]);
      assert.equal(receiver.received.length, 4, '1 attempt + 3 retries, then no more');

      receiver.respondWith([410]);
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': key },
      });
      await receiver.waitFor(5);
      await eventually(
        async () => (await admin(`/api/accounts/${account.id}/webhooks`)).body.webhooks[0].webhook.status,
        { what: 'the webhook is disabled', until: (status) => status === 'disabled' },
      );
      // Another webhook of the account, still active, receives the markers that show the events are out.
      const active = await admin(`/api/accounts/${account.id}/webhooks`, { url: other.url, name: 'other' });
      other.setSecret(active.body.secret);
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody(),
        headers: { 'x-service-key': key },
      });
      await deliverMarkers(server, key, other);
      assert.equal(receiver.received.length, 5, 'a disabled webhook gets nothing more');
    } finally {
      await receiver.close();
      await other.close();
    }
  });
});

test('a receiver that is down while the service restarts still gets the event afterwards', async () => {
  const dataDir = makeDataDir();
  const receiver = await startWebhookReceiver();
  const port = Number(new URL(receiver.url).port);
  const first = await startServer({
    env: ENV,
    dataDir,
    webhookRetryScheduleMs: [150, 150, 150, 150, 150, 150],
    webhookPollIntervalMs: 50,
  });
  const { account, key, secret } = await setUp(first, receiver);
  await receiver.close();
  const created = await api(first.baseUrl, '/api/proof/notarize', {
    body: notarizeBody(),
    headers: { 'x-service-key': key },
  });
  assert.equal(created.status, 200);
  // The first attempt fails while the receiver is down; the restart comes with the event still to send.
  await recordedAttempts(first.baseUrl, account.id, 1);
  await first.close();

  const revived = await startWebhookReceiver(port);
  revived.setSecret(secret);
  const second = await startServer({
    env: ENV,
    dataDir,
    webhookRetryScheduleMs: [150, 150, 150, 150, 150, 150],
    webhookPollIntervalMs: 50,
  });
  try {
    const [delivery] = await revived.waitFor(1);
    assert.equal(delivery?.verifyError, undefined);
    assert.equal((delivery?.verified as any).data.proof.id, created.body.proof.id);
  } finally {
    await second.close();
    second.cleanup();
    await revived.close();
  }
});
