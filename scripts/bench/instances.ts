import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { startInstance, type Instance } from '../../test/cluster.ts';
import { makeDataDir } from '../../test/helper.ts';

/**
 * Proof creation throughput with 1..N instances against one PostgreSQL (and Redis): each instance gets
 * its share of the connections, as behind a load balancer. Prints a table of requests/s per count.
 *   npm run bench:instances -- --database postgres://postgres@127.0.0.1:5432/test --max 2
 */
const { values } = parseArgs({
  options: {
    database: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    max: { type: 'string', default: '2' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
  },
});

async function freshSchema(base: string): Promise<string> {
  const schema = `bench_${randomUUID().replaceAll('-', '')}`;
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

let counter = 0;
const body = () =>
  JSON.stringify({
    contentHash: 'sha256:' + (counter++).toString(16).padStart(64, '0'),
    label: 'bench',
    idempotencyKey: `k-${process.pid}-${counter}`,
  });

const rows: string[] = [];
for (let count = 1; count <= Number(values.max); count++) {
  const dataDir = makeDataDir();
  const env = {
    DATABASE_URL: await freshSchema(values.database),
    REDIS_URL: values.redis,
    SIGNING_KEYS_DIR: `${dataDir}/keys`,
    RATE_LIMIT_MAX: '0',
  };
  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) instances.push(await startInstance(env));
  try {
    const connections = Math.max(1, Math.floor(Number(values.connections) / count));
    const results = await Promise.all(
      instances.map((instance) =>
        autocannon({
          url: `${instance.baseUrl}/api/proof/notarize`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          connections,
          duration: Number(values.duration),
          requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
        }),
      ),
    );
    const rps = results.reduce((sum, r) => sum + r.requests.average, 0);
    const p99 = Math.max(...results.map((r) => r.latency.p99));
    const errors = results.reduce((sum, r) => sum + r.errors + r.non2xx, 0);
    rows.push(`| ${count} | ${Math.round(rps)} | ${p99} | ${errors} |`);
    console.error(`${count} instance(s): ${Math.round(rps)} req/s`);
  } finally {
    await Promise.all(instances.map((i) => i.stop('SIGTERM')));
  }
}
console.log(
  ['| instances | notarize req/s | p99 ms (worst) | errors |', '|---:|---:|---:|---:|', ...rows].join('\n'),
);
