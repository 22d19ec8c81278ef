import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { NOTARIZE_PATH } from '../core/api-paths.ts';

/**
 * The service's Prometheus metrics (docs/operations.md, "Metrics"), one registry per instance: what
 * each request did, counted as its answer leaves, and the state of the log, the anchors, the webhook
 * outbox and the database, read when Prometheus scrapes. Process and event-loop figures come from
 * prom-client's default collectors, under the same `hashproof_` prefix.
 */

const PREFIX = 'hashproof_';
/** Request durations, in seconds: from a cached read (under a millisecond) to a stalled payment. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What the scrape-time figures are read from, wired by the context. */
export interface MetricsSources {
  /** The log's signed tree size, or undefined before the first checkpoint. */
  treeSize: () => Promise<number | undefined>;
  /** Proofs waiting for the sequencer, and when the oldest was made (ms). */
  logBacklog: () => Promise<{ count: number; oldestCreatedAt: number | null }>;
  /** The anchoring state (`AnchorsService.status`). */
  anchors: () => Promise<
    | { enabled: false }
    | {
        enabled: true;
        lastAnchoredAt: string | null;
        pendingBitcoin: number;
        endpoints: { url: string; kind: string; consecutiveFailures: number }[];
      }
  >;
  /** Webhook deliveries waiting for their next attempt. */
  webhookBacklog: () => Promise<number>;
  /** Each configured witness (`WitnessWorker.status`); empty when none is. */
  witnesses?: () => Promise<
    { name: string; url: string; cosignedSize: number | null; consecutiveFailures: number }[]
  >;
  /** PostgreSQL's pool; absent on the embedded database. */
  pool?: () => { total: number; idle: number; waiting: number };
  now: () => number;
}

/** What `observe` needs of a finished request. */
export interface ObservedRequest {
  method: string;
  /** The route's pattern (`/api/proofs/:id`), or undefined when no route matched. */
  route: string | undefined;
  status: number;
  seconds: number;
  /** Headers of the answer and the request that tell proofs and payments apart. */
  replayed: boolean;
  paymentSent: boolean;
  paymentSettled: boolean;
}

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'route' | 'status'>;
  readonly #durations: Histogram<'method' | 'route'>;
  readonly #proofs: Counter<'outcome'>;
  readonly #payments: Counter<'outcome'>;
  readonly #webhookAttempts: Counter<'outcome'>;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: PREFIX });
    // Three default gauges end in _total, which Prometheus reserves for counters (promtool flags them);
    // each is the sum of a gauge by type that stays (nodejs_active_handles and the others).
    for (const name of [
      'nodejs_active_resources_total',
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
    ])
      this.registry.removeSingleMetric(PREFIX + name);
    this.#requests = new Counter({
      name: `${PREFIX}http_requests_total`,
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.#durations = new Histogram({
      name: `${PREFIX}http_request_duration_seconds`,
      help: 'Time from a request arriving to its answer being sent, by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#proofs = new Counter({
      name: `${PREFIX}proofs_total`,
      help: 'Notarize requests answered with a proof: created anew, or replayed for an idempotency key.',
      labelNames: ['outcome'],
      registers,
    });
    this.#payments = new Counter({
      name: `${PREFIX}payments_total`,
      help: 'x402 payments: settled (the proof was paid), refused (402 to a sent payment), failed (the facilitator failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.#webhookAttempts = new Counter({
      name: `${PREFIX}webhook_attempts_total`,
      help: 'Webhook delivery attempts made by this instance, by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['created', 'replayed']) this.#proofs.inc({ outcome }, 0);
    for (const outcome of ['settled', 'refused', 'failed']) this.#payments.inc({ outcome }, 0);
    for (const outcome of ['succeeded', 'failed']) this.#webhookAttempts.inc({ outcome }, 0);
  }

  /** Registers the gauges read at each scrape from these sources. */
  watch(sources: MetricsSources): void {
    scrapedGauges(sources, [this.registry]);
  }

  /** Counts a finished request (the app's onResponse hook). */
  observe(request: ObservedRequest): void {
    const route = request.route ?? 'unmatched';
    this.#requests.inc({ method: request.method, route, status: String(request.status) });
    this.#durations.observe({ method: request.method, route }, request.seconds);
    if (route === NOTARIZE_PATH && request.status === 200)
      this.#proofs.inc({ outcome: request.replayed ? 'replayed' : 'created' });
    if (request.paymentSettled && request.status === 200) this.#payments.inc({ outcome: 'settled' });
    else if (request.paymentSent && request.status === 402) this.#payments.inc({ outcome: 'refused' });
    else if (request.status === 502 && route === NOTARIZE_PATH) this.#payments.inc({ outcome: 'failed' });
  }

  /** Counts a webhook delivery attempt (the dispatcher's onAttempt). */
  webhookAttempt(outcome: 'succeeded' | 'failed'): void {
    this.#webhookAttempts.inc({ outcome });
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

type GaugeMaker = <L extends string>(
  name: string,
  help: string,
  collect: (g: Gauge<L>) => Promise<void> | void,
  labelNames?: L[],
) => Gauge<L>;

/** Per witness: the tree size it last cosigned, how far it is behind the log, and its failures in a row. */
function witnessGauges(
  gauge: GaugeMaker,
  witnesses: NonNullable<MetricsSources['witnesses']>,
  treeSize: MetricsSources['treeSize'],
): void {
  const each =
    (set: (w: Awaited<ReturnType<typeof witnesses>>[number], size: number) => number) =>
    async (g: Gauge<'witness' | 'url'>) => {
      g.reset();
      const [list, size] = await Promise.all([witnesses(), treeSize()]);
      for (const w of list) g.set({ witness: w.name, url: w.url }, set(w, size ?? 0));
    };
  gauge(
    'witness_cosigned_tree_size',
    'The tree size each witness last said it cosigned; 0 before it said.',
    each((w) => w.cosignedSize ?? 0),
    ['witness', 'url'],
  );
  gauge(
    'witness_lag_entries',
    'Entries of the newest checkpoint that each witness has not cosigned yet.',
    each((w, size) => Math.max(0, size - (w.cosignedSize ?? 0))),
    ['witness', 'url'],
  );
  gauge(
    'witness_consecutive_failures',
    'Consecutive failed requests to each witness (or answers that did not verify); 0 when it cosigns.',
    each((w) => w.consecutiveFailures),
    ['witness', 'url'],
  );
}

/** Gauges read from the database and the services at each scrape. */
function scrapedGauges(sources: MetricsSources, registers: Registry[]): void {
  const gauge: GaugeMaker = <L extends string>(
    name: string,
    help: string,
    collect: (g: Gauge<L>) => Promise<void> | void,
    labelNames: L[] = [],
  ) =>
    new Gauge<L>({
      name: PREFIX + name,
      help,
      labelNames,
      registers,
      async collect() {
        await collect(this);
      },
    });
  // One read per scrape for the figures that several gauges show.
  const once = <T>(read: () => Promise<T>): (() => Promise<T>) => {
    let last: { at: number; value: Promise<T> } | undefined;
    return () => {
      if (last === undefined || performance.now() - last.at > 1_000)
        last = { at: performance.now(), value: read() };
      return last.value;
    };
  };
  sources = { ...sources, logBacklog: once(sources.logBacklog), anchors: once(sources.anchors) };
  const age = (ms: number | null) => (ms === null ? 0 : Math.max(0, (sources.now() - ms) / 1000));
  gauge('log_tree_size', 'Entries in the newest signed checkpoint of the transparency log.', async (g) => {
    g.set((await sources.treeSize()) ?? 0);
  });
  gauge('log_unsequenced_proofs', 'Proofs created but not yet in the log (the sequencer lag).', async (g) => {
    g.set((await sources.logBacklog()).count);
  });
  gauge(
    'log_oldest_unsequenced_age_seconds',
    'Age of the oldest proof not yet in the log; 0 when none waits.',
    async (g) => g.set(age((await sources.logBacklog()).oldestCreatedAt)),
  );
  gauge(
    'anchor_lag_seconds',
    'Time since the newest anchored checkpoint; 0 while anchoring is off or before the first anchor.',
    async (g) => {
      const anchors = await sources.anchors();
      g.set(anchors.enabled && anchors.lastAnchoredAt ? age(Date.parse(anchors.lastAnchoredAt)) : 0);
    },
  );
  gauge('anchor_pending_bitcoin', 'Calendar submissions not yet attested by Bitcoin.', async (g) => {
    const anchors = await sources.anchors();
    g.set(anchors.enabled ? anchors.pendingBitcoin : 0);
  });
  gauge(
    'anchor_endpoint_consecutive_failures',
    'Consecutive failures of each configured time-stamping authority and calendar; 0 when it answers.',
    async (g) => {
      g.reset();
      const anchors = await sources.anchors();
      if (!anchors.enabled) return;
      for (const e of anchors.endpoints) g.set({ url: e.url, kind: e.kind }, e.consecutiveFailures);
    },
    ['url', 'kind'],
  );
  const witnesses = sources.witnesses;
  if (witnesses !== undefined) witnessGauges(gauge, once(witnesses), sources.treeSize);
  gauge('webhook_pending_deliveries', 'Webhook deliveries waiting for their next attempt.', async (g) => {
    g.set(await sources.webhookBacklog());
  });
  const pool = sources.pool;
  if (pool !== undefined) {
    gauge(
      'db_pool_clients',
      'PostgreSQL pool: clients in use or idle (total), idle, and queries waiting for a client.',
      (g) => {
        const { total, idle, waiting } = pool();
        g.set({ state: 'total' }, total);
        g.set({ state: 'idle' }, idle);
        g.set({ state: 'waiting' }, waiting);
      },
      ['state'],
    );
  }
}
