import pino from 'pino';
import { AccountsService } from './accounts/accounts-service.ts';
import type { Config } from './config.ts';
import { createIdGenerator, type IdGenerator } from './core/ids.ts';
import { openDatabase, type DatabaseHandle } from './db/index.ts';
import { Keyring } from './keys/keyring.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { ProofsService } from './proofs/proofs-service.ts';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.ts';
import { createWebhookSender } from './webhooks/webhook-sender.ts';
import { WebhooksService } from './webhooks/webhooks-service.ts';
import { StatsService } from './stats/stats-service.ts';

/** Every dependency of the service, built once from the configuration and handed to each route plugin. */
export interface AppContext {
  config: Config;
  clock: Clock;
  ids: IdGenerator;
  database: DatabaseHandle;
  keyring: Keyring;
  proofs: ProofsService;
  accounts: AccountsService;
  webhooks: WebhooksService;
  dispatcher: WebhookDispatcher;
  /** Starts the background loops (the webhook dispatcher). */
  start(): void;
  /** Read-only figures about the proofs (dashboard, status, sitemap). */
  stats: StatsService;
  /** Stops the loops, finishes pending writes and closes the database. */
  close(): Promise<void>;
}

export interface ContextOverrides {
  clock?: Clock;
  /** Waits between webhook attempts (tests use short ones). */
  webhookRetryScheduleMs?: number[];
  webhookPollIntervalMs?: number;
  webhookTimeoutMs?: number;
  /** Where background loops log; a pino logger at the configured level when absent. */
  logger?: pino.Logger;
}

export async function createContext(config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const clock = overrides.clock ?? systemClock;
  const ids = createIdGenerator();
  const log = overrides.logger ?? pino({ level: config.logLevel });
  const keyring = Keyring.open(config.signingKeysDir);
  const database = await openDatabase(config.database);
  const { db } = database;
  const accounts = new AccountsService({ db, ids, clock });
  const webhookTimeoutMs = overrides.webhookTimeoutMs ?? 15_000;
  const dispatcher = new WebhookDispatcher({
    db,
    engine: database.engine,
    clock,
    ids,
    log,
    send: createWebhookSender({ timeoutMs: webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls }),
    // A claim outlives one attempt (its timeout) with a margin; a dead instance's claims free up after it.
    leaseMs: webhookTimeoutMs + 5_000,
    ...(overrides.webhookRetryScheduleMs ? { retryScheduleMs: overrides.webhookRetryScheduleMs } : {}),
    ...(overrides.webhookPollIntervalMs ? { pollIntervalMs: overrides.webhookPollIntervalMs } : {}),
  });
  const webhooks = new WebhooksService({
    db,
    ids,
    clock,
    accounts,
    dispatcher,
    publicBaseUrl: config.publicBaseUrl,
    allowPrivateUrls: config.webhookAllowPrivateUrls,
  });
  const proofs = new ProofsService({
    db,
    engine: database.engine,
    keyring,
    ids,
    clock,
    onCreated: (trx, created) => webhooks.enqueueProofCreated(trx, created),
    afterCommit: (events) => {
      if (events > 0) dispatcher.nudge();
    },
  });
  const stats = new StatsService({ db, clock });
  return {
    config,
    clock,
    ids,
    database,
    keyring,
    proofs,
    accounts,
    webhooks,
    dispatcher,
    stats,
    start: () => dispatcher.start(),
    async close() {
      await dispatcher.stop();
      await proofs.drain();
      await accounts.flush();
      await database.close();
    },
  };
}
