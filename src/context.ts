import pino from 'pino';
import { AccountsService } from './accounts/accounts-service.ts';
import type { Config } from './config.ts';
import { createIdGenerator, type IdGenerator } from './core/ids.ts';
import { openDatabase, type DatabaseHandle } from './db/index.ts';
import { Keyring } from './keys/keyring.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { loggerOptions, type Logger } from './platform/log-options.ts';
import { standardOutput } from './platform/log-output.ts';
import { ProofsService, type ProofsServiceDeps } from './proofs/proofs-service.ts';
import { BatchBody, NotarizeBody } from './proofs/proof-schemas.ts';
import { WebhookDispatcher } from './webhooks/webhook-dispatcher.ts';
import { createWebhookSender } from './webhooks/webhook-sender.ts';
import { WebhooksService } from './webhooks/webhooks-service.ts';
import { StatsService } from './stats/stats-service.ts';
import type { PaymentGate } from './payments/x402.ts';
import { LogGuard } from './log/log-guard.ts';
import { LogService, logOrigin } from './log/log-service.ts';
import { createLogStore } from './log/log-store.ts';
import { Sequencer } from './log/sequencer.ts';
import { CosignedCheckpoints } from './log/cosigned-checkpoints.ts';
import { WitnessStore } from './log/witness-store.ts';
import { WitnessWorker, witnessesOf } from './log/witnessing.ts';
import { proofLeafSource } from './proofs/log-leaves.ts';
import { proofFigures } from './proofs/proof-figures-store.ts';
import { Tsa } from './tsa/tsa.ts';
import { SigningThread } from './platform/signing-thread.ts';
import type { FacilitatorClient } from '@x402/core/server';
import { AnchorStore } from './anchors/anchor-store.ts';
import { AnchorWorker } from './anchors/anchor-worker.ts';
import { AnchorsService } from './anchors/anchors-service.ts';
import { ServiceMetrics } from './metrics/metrics.ts';

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
  /** The RFC 3161 time-stamp authority. */
  tsa: Tsa;
  /** The transparency log of all proofs: its reads. */
  log: LogService;
  /** The one writer of the log on this instance, started by `start`, stopped by `close`. */
  sequencer: Sequencer;
  /** Asks the witnesses to cosign the log's checkpoints (one instance, by lease), started by `start`. */
  witnessing: WitnessWorker;
  /** The anchors of the log's checkpoints by outside authorities and calendars: their reads. */
  anchors: AnchorsService;
  /** The one anchoring worker of the deployment (a lease picks the instance), started by `start`. */
  anchoring: AnchorWorker;
  /** The Prometheus metrics of this instance. */
  metrics: ServiceMetrics;
  /** The x402 payment gate; undefined in demo mode. */
  payments: PaymentGate | undefined;
  /** Read-only figures about the proofs (dashboard, status, sitemap). */
  stats: StatsService;
  /** Starts the background loops: the webhook dispatcher, the log sequencer and the anchoring worker. */
  start(): void;
  /**
   * Stops the loops, lets the proofs being committed finish, writes the pending last uses of API keys,
   * then closes the database and the signing thread.
   */
  close(): Promise<void>;
}

export interface ContextOverrides {
  clock?: Clock;
  /** Waits between webhook attempts (tests use short ones). */
  webhookRetryScheduleMs?: number[];
  webhookPollIntervalMs?: number;
  webhookTimeoutMs?: number;
  /** Where background loops log; a pino logger at the configured level on standard output when absent. */
  logger?: Logger;
  /** The x402 facilitator client; an HTTP client of X402_FACILITATOR_URL when absent. */
  facilitator?: FacilitatorClient;
  /** Bounds of searches through windows (tests use tiny ones to see every step). */
  search?: ProofsServiceDeps['search'];
  /** How long a paid request waits for another payment settling for its key before 409. */
  chargeWaitMs?: number;
}

export async function createContext(config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const clock = overrides.clock ?? systemClock;
  const ids = createIdGenerator();
  const logger = overrides.logger ?? pino(loggerOptions(config.logLevel), standardOutput());
  const keyring = Keyring.open(config.signingKeysDir);
  // Before the database opens: a facilitator that cannot take our payments stops start-up at once.
  // The payment packages (viem and the x402 SDK) load only in x402 mode: demo mode starts faster.
  const payments =
    config.paymentMode === 'x402'
      ? await (
          await import('./payments/x402.ts')
        ).PaymentGate.create(config, {
          facilitator: overrides.facilitator,
          inputSchema: NotarizeBody,
          batchInputSchema: BatchBody,
        })
      : undefined;
  const database = await openDatabase(config.database, (message) => logger.warn(message));
  const { db } = database;
  const accounts = new AccountsService({ db, ids, clock });
  const webhookTimeoutMs = overrides.webhookTimeoutMs ?? 15_000;
  // Counters are fed as things happen; the gauges read their sources once every service exists (below).
  const metrics = new ServiceMetrics();
  const dispatcher = new WebhookDispatcher({
    db,
    engine: database.engine,
    clock,
    ids,
    logger,
    onAttempt: (outcome) => metrics.webhookAttempt(outcome),
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
  const publicUrl = new URL(config.publicBaseUrl);
  const tsa = await Tsa.open(config.signingKeysDir, publicUrl.host);
  const logStore = createLogStore(db, database.engine);
  const leaves = proofLeafSource(db, database.engine);
  // The record of the checkpoints the log published, outside the database (docs/deploy.md).
  const guard = new LogGuard({ dir: config.logStateDir, logger });
  const witnessStore = new WitnessStore(db);
  const transparencyLog = new LogService({
    store: logStore,
    leaves,
    key: keyring.logKey,
    origin: logOrigin(config.publicBaseUrl),
    logger,
    guard,
    cosignatures: new CosignedCheckpoints(witnessStore, witnessesOf(config.witnesses)),
  });
  await transparencyLog.open();
  await guard.open(transparencyLog.origin, transparencyLog.verifierKey);
  const anchoring = new AnchorWorker({
    store: new AnchorStore(db),
    config: config.anchors,
    latest: () => transparencyLog.latest(),
    clock,
    logger,
  });
  const witnessing = new WitnessWorker({
    store: witnessStore,
    config: config.witnesses,
    latest: (atLeast) => transparencyLog.latest(atLeast),
    consistency: (from, to) => transparencyLog.consistency(from, to),
    clock,
    logger,
  });
  const sequencer = new Sequencer({
    store: logStore,
    leaves,
    key: keyring.logKey,
    origin: transparencyLog.origin,
    clock,
    logger,
    guard,
    onSigned: (checkpoint) => {
      transparencyLog.remember(checkpoint);
      anchoring.nudge();
      witnessing.nudge();
    },
  });
  // Before any request: a database behind the published log is told at once (and on /health).
  await sequencer.check();
  const signing = new SigningThread();
  const proofs = new ProofsService({
    db,
    sign: signing.sign,
    log: transparencyLog,
    tsa,
    engine: database.engine,
    keyring,
    ids,
    clock,
    ...(overrides.search ? { search: overrides.search } : {}),
    ...(overrides.chargeWaitMs ? { chargeWaitMs: overrides.chargeWaitMs } : {}),
    onCreated: (trx, created) => webhooks.enqueueProofCreated(trx, created),
    afterCommit: (events) => {
      if (events > 0) dispatcher.nudge();
      sequencer.nudge();
    },
  });
  const anchorStore = new AnchorStore(db);
  const anchors = new AnchorsService({
    store: anchorStore,
    config: config.anchors,
    proofs,
    log: transparencyLog,
  });
  metrics.watch({
    treeSize: async () => (await transparencyLog.latest())?.treeSize,
    logBacklog: () => transparencyLog.backlog(),
    anchors: () => anchors.status(),
    webhookBacklog: () => webhooks.pendingDeliveries(),
    ...(witnessing.enabled ? { witnesses: () => witnessing.status() } : {}),
    ...(database.pool ? { pool: database.pool } : {}),
    now: () => clock.now(),
  });
  const stats = new StatsService({ figures: proofFigures(db), clock });
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
    payments,
    log: transparencyLog,
    sequencer,
    anchors,
    anchoring,
    witnessing,
    metrics,
    tsa,
    stats,
    start: () => {
      dispatcher.start();
      sequencer.start();
      anchoring.start();
      witnessing.start();
    },
    async close() {
      await dispatcher.stop();
      await proofs.drain();
      await sequencer.stop();
      await anchoring.stop();
      await witnessing.stop();
      await accounts.flush();
      await database.close();
      await signing.close();
    },
  };
}
