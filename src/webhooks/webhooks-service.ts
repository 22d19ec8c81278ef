import { ownedFields, type AccountsService } from '../accounts/accounts-service.ts';
import type { IdGenerator } from '../core/ids.ts';
import { generateWebhookSecret } from '../core/secrets.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { isoTime, isoTimeOrNull, type Clock } from '../platform/clock.ts';
import type { Proof } from '../proofs/proof-schemas.ts';
import type { WebhookDispatcher } from './webhook-dispatcher.ts';
import { validateWebhookUrl } from './webhook-url.ts';
import type { CreateWebhookBody, Delivery, EventType, Webhook } from './webhooks-schemas.ts';
import * as store from './webhooks-store.ts';
import type { DeliveryRow, TaskRow, WebhookRow } from './webhooks-store.ts';

const RECENT_DELIVERIES = 20;

interface WebhooksServiceDeps {
  db: Db;
  ids: IdGenerator;
  clock: Clock;
  accounts: AccountsService;
  dispatcher: WebhookDispatcher;
  publicBaseUrl: string;
  allowPrivateUrls: boolean;
}

/** Webhooks, their events and deliveries (docs/webhooks.md, "Webhooks"; docs/decisions.md §5). */
export class WebhooksService {
  readonly #deps: WebhooksServiceDeps;

  constructor(deps: WebhooksServiceDeps) {
    this.#deps = deps;
  }

  /** Registers a receipt sink; the signing secret is returned here and never again. */
  async create(accountId: string, body: CreateWebhookBody): Promise<{ webhook: Webhook; secret: string }> {
    await this.#deps.accounts.requireAccount(accountId);
    const url = await validateWebhookUrl(body.url, this.#deps.allowPrivateUrls);
    const now = this.#deps.clock.now();
    const secret = generateWebhookSecret();
    const row: WebhookRow = {
      id: this.#deps.ids.next('wh', now),
      account_id: accountId,
      name: body.name ?? '',
      url,
      events: JSON.stringify(body.events ?? ['proof.created']),
      secret,
      status: 'active',
      created_at: now,
      updated_at: now,
    };
    await store.insertWebhook(this.#deps.db, row);
    return { webhook: toWebhook(row), secret };
  }

  async list(accountId: string): Promise<{ webhook: Webhook; recentDeliveries: Delivery[] }[]> {
    await this.#deps.accounts.requireAccount(accountId);
    const rows = await store.listWebhooks(this.#deps.db, accountId);
    return Promise.all(
      rows.map(async (row) => ({
        webhook: toWebhook(row),
        recentDeliveries: (await store.recentDeliveries(this.#deps.db, row.id, RECENT_DELIVERIES)).map(
          toDelivery,
        ),
      })),
    );
  }

  /** Sends a signed `webhook.test` now and records the attempt, whatever its outcome. */
  async sendTest(webhookId: string): Promise<Delivery> {
    const row = await store.findWebhook(this.#deps.db, webhookId);
    if (row === undefined)
      throw new AppError('not_found', `No webhook with id ${JSON.stringify(webhookId)}`, { id: webhookId });
    const now = this.#deps.clock.now();
    const eventId = this.#deps.ids.next('evt', now);
    const payload = {
      id: eventId,
      type: 'webhook.test' as const,
      timestamp: new Date(now).toISOString(),
      data: { webhook: { id: row.id, name: row.name, url: row.url } },
    };
    // The test attempt is made right here, not by the dispatcher, which claims only pending tasks.
    const task = this.#newTask(eventId, row.id, now, 'test');
    await store.insertEvents(
      this.#deps.db,
      [
        {
          id: eventId,
          type: payload.type,
          account_id: row.account_id,
          payload: JSON.stringify(payload),
          created_at: now,
        },
      ],
      [task],
    );
    return toDelivery(await this.#deps.dispatcher.deliver(task, 'test'));
  }

  /**
   * Writes the `proof.created` events of newly created proofs into the outbox, inside the caller's
   * transaction, so an event exists exactly when its proof does. Only proofs made with an API key have
   * an account and so subscribers.
   */
  /** Deliveries waiting for their next attempt (the outbox's backlog). */
  async pendingDeliveries(): Promise<number> {
    const row = await this.#deps.db
      .selectFrom('webhook_tasks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async enqueueProofCreated(trx: Db, proofs: Proof[]): Promise<number> {
    const owned = proofs.filter((p): p is Proof & { accountId: string } => p.accountId !== null);
    const webhooks = (await store.activeWebhooksOf(trx, [...new Set(owned.map((p) => p.accountId))])).filter(
      (w) => (JSON.parse(w.events) as EventType[]).includes('proof.created'),
    );
    if (webhooks.length === 0) return 0;
    const now = this.#deps.clock.now();
    const events = [];
    const tasks = [];
    for (const proof of owned) {
      const subscribers = webhooks.filter((w) => w.account_id === proof.accountId);
      if (subscribers.length === 0) continue;
      const id = this.#deps.ids.next('evt', now);
      const base = this.#deps.publicBaseUrl;
      const payload = {
        id,
        type: 'proof.created',
        timestamp: proof.timestamp,
        data: {
          proof,
          links: {
            proof: `${base}/proof/${proof.id}`,
            json: `${base}/api/proofs/${proof.id}`,
            verify: `${base}/api/verify/proofs/${proof.id}`,
          },
        },
      };
      events.push({
        id,
        type: 'proof.created',
        account_id: proof.accountId,
        payload: JSON.stringify(payload),
        created_at: now,
      });
      for (const webhook of subscribers) {
        tasks.push(this.#newTask(id, webhook.id, now, 'pending'));
      }
    }
    await store.insertEvents(trx, events, tasks);
    return tasks.length;
  }

  #newTask(eventId: string, webhookId: string, now: number, status: 'pending' | 'test'): TaskRow {
    return {
      id: this.#deps.ids.next('task', now),
      event_id: eventId,
      webhook_id: webhookId,
      status,
      attempts: 0,
      next_attempt_at: now,
      lease_owner: null,
      lease_until: null,
      created_at: now,
    };
  }
}

function toWebhook(row: WebhookRow): Webhook {
  return {
    ...ownedFields(row),
    url: row.url,
    events: JSON.parse(row.events) as string[],
    status: row.status === 'disabled' ? 'disabled' : 'active',
    updatedAt: isoTime(row.updated_at),
  };
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    attempt: row.attempt,
    trigger: row.trigger === 'test' ? 'test' : 'scheduled',
    url: row.url,
    status: row.status === 'succeeded' ? 'succeeded' : 'failed',
    responseStatus: row.response_status,
    durationMs: row.duration_ms,
    error: row.error,
    responseExcerpt: row.response_excerpt,
    createdAt: isoTime(row.created_at),
    nextAttemptAt: isoTimeOrNull(row.next_attempt_at),
  };
}
