/**
 * The service the webhook tests deliver from, and the steps they share: a test file calls
 * `withWebhookServer()` in its describe block; `server` is set for its tests.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { deliveredProofId, type WebhookReceiver } from '../../test/webhook-receiver.ts';

export const ENV = { SERVICE_ADMIN_KEY: ADMIN_KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' };
export const FAST = { webhookRetryScheduleMs: [100, 200, 400], webhookPollIntervalMs: 50 };

export let server: TestServer;

/** Starts the service (retrying and polling fast, for tests) before the block's tests; stops it after. */
export function withWebhookServer(): void {
  before(async () => {
    server = await startServer({ env: ENV, ...FAST });
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });
}

/** An account with an API key and a webhook to `receiver` (for `events`, or the default ones). */
export async function setUp(server: TestServer, receiver: WebhookReceiver, events?: string[]) {
  const admin = (path: string, body?: unknown) =>
    api(server.baseUrl, path, { method: body === undefined ? 'GET' : 'POST', body, headers: adminHeaders });
  const account = (await admin('/api/accounts', { name: 'hooks' })).body.account;
  const key = (await admin(`/api/accounts/${account.id}/api-keys`, {})).body.key as string;
  const created = await admin(`/api/accounts/${account.id}/webhooks`, {
    url: receiver.url,
    name: 'sink',
    ...(events ? { events } : {}),
  });
  assert.equal(created.status, 201, created.text);
  receiver.setSecret(created.body.secret);
  return {
    admin,
    account,
    key,
    created,
    webhook: created.body.webhook,
    secret: created.body.secret as string,
  };
}

/**
 * Sends two marker proofs, each once the one before it was delivered to `sink`, and returns their ids.
 * The dispatcher takes due events oldest first and sends one batch at a time: an event enqueued before
 * this call goes out in the first marker's batch or an earlier one, and the second marker's batch starts
 * only once that batch was sent. When the second marker arrives, every earlier event has arrived too.
 */
export async function deliverMarkers(
  server: TestServer,
  key: string,
  sink: WebhookReceiver,
): Promise<string[]> {
  const markers: string[] = [];
  for (const label of ['first marker', 'second marker']) {
    const made = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody({ label }),
      headers: { 'x-service-key': key },
    });
    assert.equal(made.status, 200, made.text);
    const id = made.body.proof.id as string;
    await sink.waitUntil((received) => received.some((r) => deliveredProofId(r) === id), {
      what: `the event of the ${label}`,
    });
    markers.push(id);
  }
  return markers;
}
