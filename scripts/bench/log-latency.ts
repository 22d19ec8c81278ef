/**
 * Time from proof creation to an available inclusion proof, under full notarize load:
 *   npm run bench:log -- --duration 10 --connections 64
 * Drives the service (embedded default, demo mode, rate limit off) with `connections` concurrent
 * clients creating proofs as fast as it answers; one proof in `sample` is followed by a poller that asks
 * for its inclusion proof every 5 ms until it gets a 200. Prints the creation rate and p50/p99/max of
 * that delay.
 */
import { parseArgs } from 'node:util';
import { benchEnvironment, freePort, sleep, startService } from './lib/service.ts';
import { notarizeLoad } from './lib/notarize-load.ts';
import { valueAt } from './lib/stats.ts';

export interface LogLatencyReport {
  proofsPerSecond: number;
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
}

export async function measureLogLatency(options: {
  durationSeconds: number;
  connections: number;
  sample: number;
}): Promise<LogLatencyReport> {
  const { env } = benchEnvironment('hashproof-log-bench-', 'sqlite');
  const port = await freePort();
  const service = await startService({ ...env, RATE_LIMIT_MAX: '0', LOG_LEVEL: 'warn', PORT: String(port) });
  const base = service.url;
  try {
    const delays: number[] = [];
    const pollers: Promise<void>[] = [];
    let errors = 0;
    const follow = async (id: string, createdAt: number) => {
      for (;;) {
        const res = await fetch(`${base}/api/proofs/${id}/inclusion`);
        await res.arrayBuffer();
        if (res.status === 200) return void delays.push(performance.now() - createdAt);
        if (res.status !== 409) return void errors++;
        await sleep(5);
      }
    };
    const load = await notarizeLoad(base, {
      seconds: options.durationSeconds,
      connections: options.connections,
      sample: options.sample,
      label: 'latency',
      onSampled: (id, answeredAt) => pollers.push(follow(id, answeredAt.monotonic)),
    });
    errors += load.errors;
    const created = load.created;
    await Promise.all(pollers);
    delays.sort((a, b) => a - b);
    const at = (q: number) => Math.round(valueAt(delays, q) ?? 0);
    return {
      proofsPerSecond: created / options.durationSeconds,
      samples: delays.length,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      maxMs: Math.round(delays.at(-1) ?? 0),
      errors,
    };
  } finally {
    service.process.kill('SIGTERM');
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '64' },
      sample: { type: 'string', default: '10' },
    },
  });
  const report = await measureLogLatency({
    durationSeconds: Number(values.duration),
    connections: Number(values.connections),
    sample: Number(values.sample),
  });
  console.log(
    `notarize ${Math.round(report.proofsPerSecond)} proofs/s; creation → inclusion proof over ${report.samples} samples: ` +
      `p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms; errors ${report.errors}`,
  );
}
