import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { describeMachine, peakRssMb } from './lib/machine.ts';
import {
  benchEnvironment,
  freePort,
  startProcess,
  startService,
  waitForLogSize,
  waitForOk,
} from './lib/service.ts';
import { valueAt } from './lib/stats.ts';
import { seed, seedHash, seedLabel } from './seed.ts';

export interface BenchOptions {
  durationSeconds: number;
  connections: number;
  /** `sqlite` (a fresh file) or a postgres:// URL (a fresh schema is not made: use an empty database). */
  database: string;
  proofs: number;
  /**
   * Baseline-then-route pairs per route (default 1); the pair with the median ratio is reported, so one
   * disturbed run on a noisy machine does not decide the figure.
   */
  rounds?: number;
  log?: (line: string) => void;
}

export interface RouteResult {
  route: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
  baselineRequestsPerSecond: number;
  ratio: number;
  /** Median round trip of a GET sent alone (no other load), in ms; undefined for POST routes. */
  aloneP50Ms: number | undefined;
}

export interface BenchReport {
  options: BenchOptions;
  results: RouteResult[];
  startupMs: number;
  peakRssMb: number;
  machine: string;
}

function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (error, result) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result),
    );
  });
}

const notarizeBody = (key: string) =>
  JSON.stringify({
    contentHash: seedHash(Number.MAX_SAFE_INTEGER - Math.floor(Math.random() * 1e9)),
    label: 'benchmark artifact',
    metadata: { run: 1 },
    idempotencyKey: key,
  });

/**
 * The bare server sending the bytes of `GET /api/proofs/{id}` (the same body and headers): what a read
 * that costs nothing would reach, given the size of the answer the API defines.
 */
export const BARE_READ = 'bare Fastify sending the answer of GET /api/proofs/{id}';
/** Headers that describe one connection or one moment, not the answer. */
const PER_CONNECTION = new Set(['connection', 'keep-alive', 'date', 'content-length', 'transfer-encoding']);

export async function runBenchmark(options: BenchOptions): Promise<BenchReport> {
  const log = options.log ?? (() => {});
  const directory = benchEnvironment('hashproof-bench-', options.database);
  const env = { ...directory.env, RATE_LIMIT_MAX: '0' };
  const children: ChildProcess[] = [];
  try {
    log(`seeding ${options.proofs} proofs`);
    const seededIds = await seed({ ...process.env, ...env }, options.proofs);

    const [servicePort, barePort] = [await freePort(), await freePort()];
    const bare = `http://127.0.0.1:${barePort}`;
    const started = await startService({ ...env, PORT: String(servicePort) });
    children.push(started.process);
    const service = started.url;
    // The seeded proofs enter the transparency log first, so its sequencer is idle during the runs.
    await waitForLogSize(service, options.proofs);
    children.push(startProcess('scripts/bench/bare-server.ts', { PORT: String(barePort) }));
    await waitForOk(`${bare}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });

    const replayKey = 'bench-replay';
    const created = await fetch(`${service}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: notarizeBody(replayKey),
    });
    const replayBody = await created.text();
    const proofId = (JSON.parse(replayBody) as { proof: { id: string } }).proof.id;
    // The bare server learns the bytes of one proof's answer, for the ceiling of the read routes.
    const read = await fetch(`${service}/api/proofs/${proofId}`);
    const readBody = await read.text();
    await fetch(`${bare}/copy`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        body: readBody,
        headers: Object.fromEntries([...read.headers].filter(([name]) => !PER_CONNECTION.has(name))),
      }),
    });
    const copy = await fetch(`${bare}/copy`);
    if ((await copy.text()) !== readBody || [...copy.headers].length < [...read.headers].length)
      throw new Error('the bare server does not send the answer it was given');
    const sampleN = Math.floor(options.proofs / 2);
    const common = { connections: options.connections, duration: options.durationSeconds, pipelining: 1 };
    const json = { 'content-type': 'application/json' };
    let counter = 0;
    // Many different proofs, one after another: reads the cache cannot answer, and caches filled.
    let next = 0;
    const overSeeded = (path: string) => ({
      route: `GET ${path}{id} (${seededIds.length} proofs)`,
      opts: {
        url: service,
        requests: [
          {
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              path: `${path}${seededIds[next++ % seededIds.length] ?? proofId}`,
            }),
          },
        ],
      },
    });
    const routes: { route: string; opts: autocannon.Options }[] = [
      {
        route: 'POST /api/proof/notarize (new keys)',
        opts: {
          url: `${service}/api/proof/notarize`,
          method: 'POST',
          headers: json,
          requests: [
            { setupRequest: (req) => ({ ...req, body: notarizeBody(`bench-${process.pid}-${counter++}`) }) },
          ],
        },
      },
      {
        route: 'POST /api/proof/notarize (replay)',
        opts: {
          url: `${service}/api/proof/notarize`,
          method: 'POST',
          headers: json,
          body: JSON.stringify({ ...(JSON.parse(notarizeBody(replayKey)) as object), ...pick(replayBody) }),
        },
      },
      { route: 'GET /api/proofs/{id}', opts: { url: `${service}/api/proofs/${proofId}` } },
      { route: BARE_READ, opts: { url: `${bare}/copy` } },
      overSeeded('/api/proofs/'),
      { route: 'GET /api/verify/proofs/{id}', opts: { url: `${service}/api/verify/proofs/${proofId}` } },
      overSeeded('/api/verify/proofs/'),
      { route: 'GET /api/proofs/recent', opts: { url: `${service}/api/proofs/recent` } },
      {
        route: 'GET /api/proofs/search?contentHash',
        opts: { url: `${service}/api/proofs/search?contentHash=${seedHash(sampleN)}` },
      },
      {
        route: 'GET /api/proofs/search?q (label)',
        opts: { url: `${service}/api/proofs/search?q=${encodeURIComponent(seedLabel(sampleN))}` },
      },
    ];
    const baselineOpts: autocannon.Options = {
      url: `${bare}/api/proof/notarize`,
      method: 'POST',
      headers: json,
      requests: [{ setupRequest: (req) => ({ ...req, body: notarizeBody(`bare-${counter++}`) }) }],
    };

    const results: RouteResult[] = [];
    const rounds = Math.max(1, options.rounds ?? 1);
    for (const { route, opts } of routes) {
      const pairs: { baseline: autocannon.Result; measured: autocannon.Result; ratio: number }[] = [];
      for (let round = 0; round < rounds; round++) {
        // Alternate: a baseline run right before each route, so both see the same machine conditions.
        const baseline = await run({ ...common, ...baselineOpts });
        const measured = await run({ ...common, ...opts });
        pairs.push({ baseline, measured, ratio: measured.requests.average / baseline.requests.average });
      }
      const { baseline, measured, ratio } = medianByRatio(pairs);
      const result: RouteResult = {
        route,
        requestsPerSecond: measured.requests.average,
        p50Ms: measured.latency.p50,
        p99Ms: measured.latency.p99,
        maxMs: measured.latency.max,
        errors: measured.errors + measured.timeouts,
        non2xx: measured.non2xx,
        baselineRequestsPerSecond: baseline.requests.average,
        ratio,
        aloneP50Ms:
          // Reads of one URL of the service (not the bare server's copy of an answer).
          opts.method === undefined &&
          opts.requests === undefined &&
          String(opts.url).startsWith(`${service}/`)
            ? await alone(String(opts.url))
            : undefined,
      };
      results.push(result);
      log(
        `${route}: ${Math.round(result.requestsPerSecond)} req/s (baseline ${Math.round(result.baselineRequestsPerSecond)}), ratio ${result.ratio.toFixed(2)}` +
          (rounds > 1 ? ` (median of ${pairs.map((pair) => pair.ratio.toFixed(2)).join(', ')})` : ''),
      );
    }
    return {
      options: { ...options, rounds },
      results,
      startupMs: started.startupMs,
      peakRssMb: peakRssMb(started.process.pid ?? 0),
      machine: describeMachine(os.cpus().length),
    };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    directory.remove();
  }
}

/** The entry with the median ratio (the lower middle one of an even count); the list must not be empty. */
export function medianByRatio<T extends { ratio: number }>(entries: T[]): T {
  const sorted = [...entries].sort((a, b) => a.ratio - b.ratio);
  const median = sorted[(sorted.length - 1) >> 1];
  if (median === undefined) throw new Error('no entries');
  return median;
}

/** The median round trip of 200 requests sent one after another: the server's time plus loopback. */
async function alone(url: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const started = performance.now();
    await (await fetch(url)).arrayBuffer();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return valueAt(times, 0.5) ?? NaN;
}

/** The request fields of a stored proof, so the replay benchmark sends exactly the same request. */
function pick(body: string): Record<string, unknown> {
  const { proof } = JSON.parse(body) as { proof: { contentHash: string; label: string } };
  return { contentHash: proof.contentHash, label: proof.label };
}

export function formatReport(report: BenchReport): string {
  const lines = [
    `machine: ${report.machine}`,
    `options: ${report.options.durationSeconds} s per run, ${report.options.connections} connections, database ${report.options.database}, ${report.options.proofs} seeded proofs, ${report.options.rounds ?? 1} round(s) per route (median ratio)`,
    `startup to first 200 on /health: ${Math.round(report.startupMs)} ms; service peak RSS: ${report.peakRssMb.toFixed(0)} MB`,
    '',
    '| route | req/s | p50 ms | p99 ms | max ms | errors | non-2xx | baseline req/s | ratio | alone p50 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...report.results.map(
      (r) =>
        `| ${r.route} | ${Math.round(r.requestsPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.errors} | ${r.non2xx} | ${Math.round(r.baselineRequestsPerSecond)} | ${r.ratio.toFixed(2)} | ${r.aloneP50Ms === undefined ? '–' : r.aloneP50Ms.toFixed(2)} |`,
    ),
  ];
  return lines.join('\n');
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '64' },
      database: { type: 'string', default: 'sqlite' },
      proofs: { type: 'string', default: '10000' },
      rounds: { type: 'string', default: '1' },
    },
  });
  const report = await runBenchmark({
    durationSeconds: Number(values.duration),
    connections: Number(values.connections),
    database: values.database,
    proofs: Number(values.proofs),
    rounds: Number(values.rounds),
    log: (line) => console.error(line),
  });
  console.log(formatReport(report));
}
