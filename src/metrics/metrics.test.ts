import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  expectError,
  freePort,
  isPostgres,
  loggedProof,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { answers, killGroup, run, start } from '../../test/process.ts';
import { eventually } from '../../test/wait.ts';

/** The value of one sample of a Prometheus text exposition, or undefined when absent. */
function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}}` : ''} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics', () => {
  let server: TestServer;
  let metricsPort: number;
  const created: string[] = [];
  before(async () => {
    metricsPort = await freePort();
    server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, METRICS_PORT: String(metricsPort) } });
    for (let n = 0; n < 5; n++) {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({ contentHash: sampleHash(700 + n), idempotencyKey: `metrics-${n}` }),
      });
      assert.equal(res.status, 200);
      created.push(res.body.proof.id);
    }
    const replay = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(700), idempotencyKey: 'metrics-0' }),
    });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    await loggedProof(server.baseUrl, created.at(-1)!);
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  test('GET /metrics needs the administrator key on the main port, and none on METRICS_PORT', async () => {
    expectError(await api(server.baseUrl, '/metrics'), 401, 'unauthorized');
    const withKey = await api(server.baseUrl, '/metrics', { headers: adminHeaders });
    assert.equal(withKey.status, 200);
    assert.ok(withKey.text.includes('hashproof_proofs_total'));
    assert.ok((await scrape()).includes('hashproof_proofs_total'));
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/`)).status, 404);
  });

  test('the counts and gauges say what happened, and promtool accepts the exposition', async () => {
    const text = await scrape();
    assert.equal(sample(text, 'hashproof_proofs_total', 'outcome="created"'), 5);
    assert.equal(sample(text, 'hashproof_proofs_total', 'outcome="replayed"'), 1);
    assert.equal(
      sample(text, 'hashproof_http_requests_total', 'method="POST",route="/api/proof/notarize",status="200"'),
      6,
    );
    assert.equal(
      sample(text, 'hashproof_http_requests_total', 'method="GET",route="/metrics",status="401"'),
      1,
    );
    assert.ok(sample(text, 'hashproof_log_tree_size')! >= 5);
    assert.equal(sample(text, 'hashproof_log_unsequenced_proofs'), 0);
    assert.equal(sample(text, 'hashproof_log_oldest_unsequenced_age_seconds'), 0);
    assert.equal(sample(text, 'hashproof_webhook_pending_deliveries'), 0);
    assert.equal(sample(text, 'hashproof_payments_total', 'outcome="settled"'), 0);
    assert.ok(sample(text, 'hashproof_nodejs_eventloop_lag_p99_seconds') !== undefined);
    assert.ok(sample(text, 'hashproof_process_resident_memory_bytes')! > 0);
    if (isPostgres()) assert.ok(sample(text, 'hashproof_db_pool_clients', 'state="total"')! >= 1);
    else assert.equal(sample(text, 'hashproof_db_pool_clients', 'state="total"'), undefined);
    const checked = await run('promtool', ['check', 'metrics'], { stdin: text });
    // promtool exits 0 for a well-formed exposition; it prints lint remarks, never errors, for ours.
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
  });

  test('a Prometheus server scrapes the instance and answers a query over what it scraped', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'prometheus-'));
    const port = await freePort();
    writeFileSync(
      path.join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: hashproof',
        '    static_configs:',
        `      - targets: ['127.0.0.1:${metricsPort}']`,
        '',
      ].join('\n'),
    );
    const prometheus = start(
      'prometheus',
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { detached: true },
    );
    try {
      await answers(`http://127.0.0.1:${port}/-/ready`, prometheus);
      const query = encodeURIComponent('hashproof_proofs_total{outcome="created"}');
      const answer = await eventually(
        async () => {
          try {
            const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${query}`);
            return (await res.json()) as { data?: { result?: { value: [number, string] }[] } };
          } catch {
            return undefined; // not listening yet
          }
        },
        {
          what: 'Prometheus has scraped the instance',
          until: (a) => (a?.data?.result?.length ?? 0) > 0,
          timeoutMs: 30_000,
        },
      );
      assert.equal(answer!.data!.result![0]!.value[1], '5');
      const targets = (await (await fetch(`http://127.0.0.1:${port}/api/v1/targets`)).json()) as {
        data: { activeTargets: { health: string; lastError: string }[] };
      };
      assert.equal(targets.data.activeTargets[0]!.health, 'up', targets.data.activeTargets[0]!.lastError);
    } finally {
      killGroup(prometheus);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
