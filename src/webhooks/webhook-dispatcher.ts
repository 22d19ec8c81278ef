import { randomUUID } from 'node:crypto';
import type { IdGenerator } from '../core/ids.ts';
import { signWebhook } from '../core/standard-webhooks.ts';
import type { Db } from '../db/index.ts';
import { BackgroundLoop } from '../platform/background-loop.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/log-options.ts';
import type { WebhookSender } from './webhook-sender.ts';
import * as store from './webhooks-store.ts';
import type { DeliveryRow, TaskRow } from './webhooks-store.ts';

/** Waits after a failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (Svix's schedule); then the task fails. */
const DEFAULT_RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/** A batch that failed (the database, most likely) is tried again after one poll, then twice as long each time, at most this long. */
const MAX_STEP_RETRY_MS = 30_000;

interface DispatcherOptions {
  db: Db;
  engine: 'sqlite' | 'postgres';
  clock: Clock;
  ids: IdGenerator;
  send: WebhookSender;
  logger: Logger;
  retryScheduleMs?: number[];
  pollIntervalMs?: number;
  /** How long a claim holds a task; longer than the send timeout, so a live sender never loses it. */
  leaseMs?: number;
  batchSize?: number;
  /** 0.2 = ±20 %. */
  jitter?: number;
  /** Hears the outcome of every attempt (the metrics count them). */
  onAttempt?: (outcome: 'succeeded' | 'failed') => void;
}

/**
 * Delivers the outbox: claims due tasks with a lease, sends each (concurrently, so one slow receiver
 * holds up nobody), records every attempt and schedules the next. Tasks whose dispatcher died are
 * claimed again when their lease expires, so pending deliveries resume after a restart.
 */
export class WebhookDispatcher {
  readonly #o: Required<DispatcherOptions>;
  readonly #owner = randomUUID();
  readonly #loop: BackgroundLoop;

  constructor(options: DispatcherOptions) {
    this.#o = {
      retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
      pollIntervalMs: 1000,
      leaseMs: 60_000,
      batchSize: 20,
      jitter: 0.2,
      onAttempt: () => {},
      ...options,
    };
    const { pollIntervalMs, batchSize } = this.#o;
    this.#loop = new BackgroundLoop({
      name: 'webhook dispatcher',
      // A full batch: more tasks may be due at once.
      step: async () => ((await this.runOnce()) === batchSize ? 0 : pollIntervalMs),
      logger: this.#o.logger,
      retry: { firstMs: pollIntervalMs, maxMs: Math.max(pollIntervalMs, MAX_STEP_RETRY_MS) },
      keepsProcessAlive: false,
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** New work was committed: look now rather than at the next poll. */
  nudge(): void {
    this.#loop.nudge();
  }

  /** Stops once the batch under way is delivered and recorded. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Claims and delivers one batch of due tasks; returns how many it claimed. */
  async runOnce(): Promise<number> {
    const now = this.#o.clock.now();
    const tasks = await store.claimDueTasks(
      this.#o.db,
      this.#o.engine,
      this.#owner,
      now,
      now + this.#o.leaseMs,
      this.#o.batchSize,
    );
    await Promise.all(tasks.map((task) => this.deliver(task, 'scheduled')));
    return tasks.length;
  }

  /** One attempt of one task; a test delivery is tried once and never retried. */
  async deliver(task: TaskRow, trigger: 'scheduled' | 'test'): Promise<DeliveryRow> {
    const { db, clock, ids } = this.#o;
    const [event, webhook] = await Promise.all([
      store.findEvent(db, task.event_id),
      store.findWebhook(db, task.webhook_id),
    ]);
    if (event === undefined || webhook === undefined)
      throw new Error(`webhook task ${task.id} lost its event or webhook`);
    const attempt = task.attempts + 1;
    const startedAt = clock.now();
    const base = {
      id: ids.next('dlv', startedAt),
      webhook_id: webhook.id,
      event_id: event.id,
      event_type: event.type,
      attempt,
      trigger,
      url: webhook.url,
      created_at: startedAt,
    };

    if (webhook.status !== 'active' && trigger === 'scheduled') {
      const row = {
        ...base,
        status: 'failed',
        response_status: null,
        duration_ms: 0,
        error: 'webhook_disabled',
        response_excerpt: null,
        next_attempt_at: null,
      };
      await store.recordAttempt(db, row, {
        id: task.id,
        status: 'failed',
        attempts: attempt,
        nextAttemptAt: task.next_attempt_at,
      });
      return row;
    }

    const timestamp = Math.floor(startedAt / 1000);
    const result = await this.#o.send({
      url: webhook.url,
      body: event.payload,
      headers: {
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(webhook.secret, event.id, timestamp, event.payload),
      },
    });
    const status = result.responseStatus;
    const isSuccess = status !== null && status >= 200 && status < 300;
    this.#o.onAttempt(isSuccess ? 'succeeded' : 'failed');
    const isGone = status === 410;
    const retryDelay = this.#retryDelay(attempt, result.retryAfterSeconds);
    const nextAttemptAt =
      !isSuccess && !isGone && trigger === 'scheduled' && retryDelay !== null
        ? clock.now() + retryDelay
        : null;
    const row: DeliveryRow = {
      ...base,
      status: isSuccess ? 'succeeded' : 'failed',
      response_status: status,
      duration_ms: result.durationMs,
      error: isSuccess ? null : (result.error ?? `http_${status}`),
      response_excerpt: result.responseExcerpt,
      next_attempt_at: nextAttemptAt,
    };
    await store.recordAttempt(db, row, {
      id: task.id,
      status: isSuccess ? 'succeeded' : nextAttemptAt === null ? 'failed' : 'pending',
      attempts: attempt,
      nextAttemptAt: nextAttemptAt ?? task.next_attempt_at,
    });
    if (isGone) {
      await store.disableWebhook(db, webhook.id, clock.now());
      this.#o.logger.warn({ webhookId: webhook.id }, 'webhook answered 410 Gone; disabled');
    }
    return row;
  }

  /** The wait before attempt `attempt + 1`, or null when the schedule is exhausted. */
  #retryDelay(attempt: number, retryAfterSeconds: number | null): number | null {
    const base = this.#o.retryScheduleMs[attempt - 1];
    if (base === undefined) return null;
    const jittered = base * (1 + (Math.random() * 2 - 1) * this.#o.jitter);
    if (retryAfterSeconds === null) return Math.round(jittered);
    // A receiver asking for more time gets it, up to twice the scheduled wait.
    return Math.round(Math.min(Math.max(jittered, retryAfterSeconds * 1000), 2 * base));
  }
}
