/**
 * Anchoring under full notarize load:
 *   npm run bench:anchors -- --duration 20 --connections 32 --interval-ms 5000
 * Runs the service (embedded default, demo mode, rate limit off) twice in one sitting, anchoring off
 * then on (an outside RFC 3161 authority: OpenSSL's own TSA on loopback), with `connections` clients
 * creating proofs as fast as it answers, and reports the throughput of each and their ratio. With
 * anchoring on, one proof in `sample` is followed afterwards: from the moment its creation was
 * answered to the moment the authority answered for the first checkpoint that holds it (p50/p99/max).
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { startOpensslTsa } from '../../test/openssl-tsa.ts';
import { notarizeLoad } from './lib/notarize-load.ts';
import { benchEnvironment, freePort, startService } from './lib/service.ts';
import { valueAt } from './lib/stats.ts';

interface Phase {
  proofsPerSecond: number;
  errors: number;
  sampled: { id: string; answeredAt: number }[];
}

async function load(base: string, seconds: number, connections: number, sample: number): Promise<Phase> {
  const sampled: Phase['sampled'] = [];
  const { created, errors } = await notarizeLoad(base, {
    seconds,
    connections,
    sample,
    label: 'anchor bench',
    onSampled: (id, answeredAt) => sampled.push({ id, answeredAt: answeredAt.wall }),
  });
  return { proofsPerSecond: created / seconds, errors, sampled };
}

async function phase(
  env: Record<string, string>,
  options: { seconds: number; connections: number; sample: number },
): Promise<Phase & { url: string; stop: () => void }> {
  const { env: base, remove } = benchEnvironment('hashproof-anchor-bench-', 'sqlite');
  const port = await freePort();
  const service = await startService({
    ...base,
    ...env,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'warn',
    PORT: String(port),
  });
  const result = await load(service.url, options.seconds, options.connections, options.sample);
  return {
    ...result,
    url: service.url,
    stop: () => {
      service.process.kill('SIGTERM');
      remove();
    },
  };
}

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
    sample: { type: 'string', default: '20' },
    'interval-ms': { type: 'string', default: '5000' },
  },
});
const options = {
  seconds: Number(values.duration),
  connections: Number(values.connections),
  sample: Number(values.sample),
};
const intervalMs = Number(values['interval-ms']);
const tsa = await startOpensslTsa('Bench');
try {
  const off = await phase({}, options);
  off.stop();
  const on = await phase(
    { ANCHOR_TSA_URLS: tsa.url, ANCHOR_INTERVAL_MS: String(intervalMs), ANCHOR_ALLOW_PRIVATE_URLS: 'true' },
    options,
  );
  const delays: number[] = [];
  let unanchored = 0;
  const deadline = Date.now() + intervalMs + 30_000;
  for (const { id, answeredAt } of on.sampled) {
    for (;;) {
      const res = await fetch(`${on.url}/api/proofs/${id}/anchors`);
      const body = (await res.json()) as { checkpoint?: string };
      if (res.status === 200 && body.checkpoint !== undefined) {
        const imprint = createHash('sha256').update(body.checkpoint, 'utf8').digest('hex');
        delays.push((tsa.answeredAt.get(imprint) ?? NaN) - answeredAt);
        break;
      }
      if (Date.now() > deadline) {
        unanchored++;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  on.stop();
  delays.sort((a, b) => a - b);
  const at = (q: number) => Math.round(valueAt(delays, q) ?? NaN);
  console.log(`notarize, anchoring off: ${Math.round(off.proofsPerSecond)} proofs/s (errors ${off.errors})`);
  console.log(`notarize, anchoring on:  ${Math.round(on.proofsPerSecond)} proofs/s (errors ${on.errors})`);
  console.log(`ratio on/off: ${(on.proofsPerSecond / off.proofsPerSecond).toFixed(3)}`);
  console.log(
    `creation → outside RFC 3161 anchor (ANCHOR_INTERVAL_MS=${intervalMs}) over ${delays.length} proofs: ` +
      `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${Math.round(delays.at(-1) ?? NaN)} ms; ` +
      `goal p99 ≤ ${intervalMs + 2000} ms; not anchored: ${unanchored}`,
  );
} finally {
  await tsa.close();
}
