/**
 * The write path against the limit of the machine: the bare POST route, the proof baseline (the
 * irreducible work of a proof in a bare route, `proof-baseline-server.ts`), `POST /api/proof/notarize`
 * with new keys and, when the service has it, `POST /api/proof/batch` with 100 new items a request,
 * run one after another in that order so they see the same machine conditions.
 */
import type autocannon from 'autocannon';
import { seedHash } from '../seed.ts';
import { medianByRatio, run } from './measure.ts';

/** Items in each request of the batch run. */
export const BATCH_SIZE = 100;
/**
 * The batch run's connections, as a share of the others': at 64 connections, 8 batches (800 proofs) in
 * flight keep the service as busy as 6,400 would, and each connection completes enough requests in a
 * run of a few seconds for its rate to mean something (a batch takes a second or more under load).
 */
export const BATCH_CONNECTION_SHARE = 1 / 8;

export const WRITE_RUNS = {
  bare: 'bare Fastify POST (parse, answer a constant)',
  baseline: 'proof baseline (parse, sign, group commit)',
  notarize: 'POST /api/proof/notarize (new keys)',
  batch: `POST /api/proof/batch (${BATCH_SIZE} new items)`,
} as const;

export interface WriteRun {
  run: string;
  requestsPerSecond: number;
  /** Proofs created per second: requests × items per request. */
  proofsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
}

export interface WritePathResult {
  runs: WriteRun[];
  /** Notarize's proofs per second over the proof baseline's. */
  notarizeRatio: number;
  /** Proofs per second through batches over those through notarize; undefined without a batch route. */
  batchRatio: number | undefined;
  /** The proof baseline's requests per second over the bare POST route's. */
  baselineRatio: number;
  /** With several rounds: each round's notarize ratio, in order (the median round is reported). */
  roundRatios: number[];
}

let keys = 0;
/** A new proof's body: a fresh idempotency key and content hash each time (`prefix` names the run). */
export const newItem = (prefix: string) => ({
  contentHash: seedHash(Number.MAX_SAFE_INTEGER - keys),
  label: 'benchmark artifact',
  metadata: { run: 1 },
  idempotencyKey: `${prefix}-${process.pid}-${keys++}`,
});

const post = (url: string, body: () => unknown): autocannon.Options => ({
  url,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  requests: [{ setupRequest: (req) => ({ ...req, body: JSON.stringify(body()) }) }],
});

/** Whether the service has the batch route: a malformed body is refused by it, not answered 404. */
export async function hasBatchRoute(service: string): Promise<boolean> {
  const res = await fetch(`${service}/api/proof/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  await res.arrayBuffer();
  return res.status !== 404;
}

/**
 * Sends one batch of new items and fails unless each was answered with a new proof: autocannon counts
 * statuses only, and a batch answers 200 even when its items fail.
 */
export async function assertBatchCreates(service: string): Promise<void> {
  const res = await fetch(`${service}/api/proof/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ items: Array.from({ length: BATCH_SIZE }, () => newItem('check')) }),
  });
  const body = (await res.json()) as { items?: { ok: boolean; idempotentReplay?: boolean }[] };
  const created = body.items?.filter((item) => item.ok && item.idempotentReplay === false).length ?? 0;
  if (res.status !== 200 || created !== BATCH_SIZE)
    throw new Error(`a batch of ${BATCH_SIZE} new items created ${created} proofs (status ${res.status})`);
}

function summarise(name: string, result: autocannon.Result, itemsPerRequest: number): WriteRun {
  return {
    run: name,
    requestsPerSecond: result.requests.average,
    proofsPerSecond: result.requests.average * itemsPerRequest,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/**
 * Runs the four `rounds` times and reports the round with the median notarize ratio (notarize over the
 * proof baseline), each figure taken from that one round.
 */
export async function measureWritePath(
  targets: { bare: string; baseline: string; service: string; batch: boolean },
  settings: { connections: number; durationSeconds: number; rounds: number; log: (line: string) => void },
): Promise<WritePathResult> {
  const common = { connections: settings.connections, duration: settings.durationSeconds, pipelining: 1 };
  const plan: { name: string; opts: autocannon.Options; items: number; connections?: number }[] = [
    {
      name: WRITE_RUNS.bare,
      opts: post(`${targets.bare}/api/proof/notarize`, () => newItem('bare')),
      items: 1,
    },
    {
      name: WRITE_RUNS.baseline,
      opts: post(`${targets.baseline}/api/proof/notarize`, () => newItem('baseline')),
      items: 1,
    },
    {
      name: WRITE_RUNS.notarize,
      opts: post(`${targets.service}/api/proof/notarize`, () => newItem('notarize')),
      items: 1,
    },
  ];
  if (targets.batch) {
    await assertBatchCreates(targets.service);
    plan.push({
      name: WRITE_RUNS.batch,
      opts: post(`${targets.service}/api/proof/batch`, () => ({
        items: Array.from({ length: BATCH_SIZE }, () => newItem('batch')),
      })),
      items: BATCH_SIZE,
      connections: Math.max(1, Math.round(settings.connections * BATCH_CONNECTION_SHARE)),
    });
  }
  const rounds: { ratio: number; result: Omit<WritePathResult, 'roundRatios'> }[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    const runs: WriteRun[] = [];
    for (const { name, opts, items, connections } of plan)
      runs.push(
        summarise(name, await run({ ...common, ...opts, ...(connections ? { connections } : {}) }), items),
      );
    const [bare, baseline, notarize, batch] = runs as [WriteRun, WriteRun, WriteRun, WriteRun | undefined];
    const ratio = notarize.proofsPerSecond / baseline.proofsPerSecond;
    rounds.push({
      ratio,
      result: {
        runs,
        notarizeRatio: ratio,
        batchRatio: batch === undefined ? undefined : batch.proofsPerSecond / notarize.proofsPerSecond,
        baselineRatio: baseline.requestsPerSecond / bare.requestsPerSecond,
      },
    });
    settings.log(
      runs.map((r) => `${r.run}: ${Math.round(r.proofsPerSecond)} proofs/s`).join('; ') +
        `; notarize / baseline ${ratio.toFixed(2)}`,
    );
  }
  return { ...medianByRatio(rounds).result, roundRatios: rounds.map((round) => round.ratio) };
}

/** The write path's table, and its ratios. */
export function formatWritePath(result: WritePathResult): string[] {
  const figure = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(2));
  return [
    '| write path | req/s | proofs/s | p50 ms | p99 ms | max ms | errors | non-2xx |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...result.runs.map(
      (r) =>
        `| ${r.run} | ${Math.round(r.requestsPerSecond)} | ${r.run === WRITE_RUNS.bare ? '–' : Math.round(r.proofsPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.errors} | ${r.non2xx} |`,
    ),
    '',
    `proof baseline / bare POST: ${figure(result.baselineRatio)}; notarize / proof baseline: ${figure(result.notarizeRatio)} (goal ≥ 0.6)` +
      (result.roundRatios.length > 1 ? ` (rounds: ${result.roundRatios.map(figure).join(', ')})` : '') +
      `; batch proofs/s / notarize proofs/s: ${figure(result.batchRatio)} (goal ≥ 3)`,
  ];
}
