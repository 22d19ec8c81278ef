/** The throughput benchmark's runs: each route against the baseline, and its reads timed alone. */
import autocannon from 'autocannon';
import { valueAt } from '../lib/stats.ts';
import type { RouteResult } from './report.ts';
import type { BenchRoute } from './routes.ts';

/** One autocannon run. */
export function run(opts: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(opts, (error, result) =>
      error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result),
    );
  });
}

/**
 * Runs each route `rounds` times, each run right after a run of the `baseline`, and reports the pair with
 * the median ratio; reads of one URL of the service are also timed alone.
 */
export async function measureRoutes(
  routes: BenchRoute[],
  baselineOpts: autocannon.Options,
  settings: {
    service: string;
    connections: number;
    durationSeconds: number;
    rounds: number;
    log: (line: string) => void;
  },
): Promise<RouteResult[]> {
  const { service, rounds, log } = settings;
  const common = { connections: settings.connections, duration: settings.durationSeconds, pipelining: 1 };
  const results: RouteResult[] = [];
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
        opts.method === undefined && opts.requests === undefined && String(opts.url).startsWith(`${service}/`)
          ? await alone(String(opts.url))
          : undefined,
    };
    results.push(result);
    log(
      `${route}: ${Math.round(result.requestsPerSecond)} req/s (baseline ${Math.round(result.baselineRequestsPerSecond)}), ratio ${result.ratio.toFixed(2)}` +
        (rounds > 1 ? ` (median of ${pairs.map((pair) => pair.ratio.toFixed(2)).join(', ')})` : ''),
    );
  }
  return results;
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
