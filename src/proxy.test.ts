import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { POSTGRES_URL, postgresSchema, startInstances, type Instance } from '../test/cluster.ts';
import { startFlakyProxy } from '../test/flaky-proxy.ts';
import { deferredPost } from '../test/graceful-stop.ts';
import { makeDataDir, notarizeBody, REDIS_URL, requireService } from '../test/helper.ts';
import { freeNginxPort, send, startNginx, type Answer, type Nginx } from '../test/nginx.ts';
import { printed, run } from '../test/process.ts';
import { Arrivals, within } from '../test/wait.ts';

const UNIT = path.resolve(import.meta.dirname, '../deploy/systemd/hashproof.service');

const analyzeMissing = await run('systemd-analyze', ['--version']).then(
  () => false,
  () => 'skipped: systemd-analyze is not installed',
);
if (analyzeMissing && process.env.CI === 'true')
  throw new Error('systemd-analyze is not installed; CI needs it');

describe('the shipped systemd unit', () => {
  const unit = readFileSync(UNIT, 'utf8');
  const settings = (key: string) =>
    [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((match) => match[1]!.trim());

  test('systemd-analyze verify accepts it without a warning', { skip: analyzeMissing }, async () => {
    // The unit as shipped, but for the Node it starts: systemd checks that the program exists.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-unit-'));
    try {
      const file = path.join(dir, 'hashproof.service');
      writeFileSync(file, unit.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${process.execPath} `));
      const verified = await run('systemd-analyze', ['verify', file]);
      assert.equal(verified.code, 0, verified.stderr);
      assert.equal(verified.stderr.trim(), '', 'no unknown key and no bad value');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('it stops with the draining signal, reloads keys on SIGHUP and writes only its data directory', () => {
    assert.deepEqual(settings('KillSignal'), ['SIGTERM']);
    assert.deepEqual(settings('ExecReload'), ['/bin/kill -HUP $MAINPID']);
    assert.deepEqual(settings('Restart'), ['on-failure']);
    assert.deepEqual(settings('RestartPreventExitStatus'), ['2']); // a bad configuration
    assert.deepEqual(settings('ProtectSystem'), ['strict']);
    assert.deepEqual(settings('ReadWritePaths'), ['/var/lib/hashproof']);
    assert.deepEqual(settings('NoNewPrivileges'), ['yes']);
    assert.deepEqual(settings('MemoryDenyWriteExecute'), [], 'V8 needs executable memory');
    const [execStart = ''] = settings('ExecStart');
    assert.match(execStart, /--max-semi-space-size=8 --max-old-space-size=256 \S+\/dist\/main\.js$/);
    assert.ok(
      Number(/^(\d+)s$/.exec(settings('TimeoutStopSec')[0] ?? '')?.[1]) > 30,
      'longer than a request',
    );
  });
});

const nginxMissing = await run('nginx', ['-v']).then(
  () => false,
  () => 'skipped: nginx is not installed',
);
if (nginxMissing && process.env.CI === 'true') throw new Error('nginx is not installed; CI needs it');
const skip =
  nginxMissing ||
  (await requireService('PostgreSQL', POSTGRES_URL)) ||
  (await requireService('Redis', REDIS_URL));

/** The address nginx connects to the instances from: the one TRUST_PROXY names. */
const PROXY_ADDRESS = '127.0.0.4';
const RATE_LIMIT_MAX = 5;

/** The remaining budget an answer announces (`RateLimit: "default";r=4;t=600`), or the status. */
const remaining = (answer: Answer) =>
  answer.status === 429 ? 429 : Number(/;r=(\d+);/.exec(String(answer.headers.ratelimit))?.[1]);

/**
 * Debian's nginx, configured by deploy/nginx/hashproof.conf, terminating TLS in front of two real service
 * processes on one PostgreSQL schema and one Redis (docs/deploy.md, "Behind a reverse proxy").
 */
describe('two instances behind nginx', { skip }, () => {
  let instances: Instance[] = [];
  let nginx: Nginx;
  const dataDir = makeDataDir();
  const nginxDir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-nginx-'));
  let proofId = '';

  before(async () => {
    const [httpsPort, httpPort] = [await freeNginxPort(), await freeNginxPort()];
    instances = await startInstances(2, {
      DATABASE_URL: await postgresSchema(dataDir),
      REDIS_URL,
      REDIS_KEY_PREFIX: `hashproof-test-${randomUUID()}:`,
      SIGNING_KEYS_DIR: `${dataDir}/keys`,
      PUBLIC_BASE_URL: `https://localhost:${httpsPort}`,
      TRUST_PROXY: PROXY_ADDRESS,
      RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      // Longer than the suite, so no window ends while a test counts.
      RATE_LIMIT_WINDOW_MS: '600000',
      LOG_LEVEL: 'info', // the "stopping" line
    });
    const upstreams = instances.map((instance) => new URL(instance.baseUrl).host) as [string, string];
    nginx = await startNginx({ dir: nginxDir, httpsPort, httpPort, upstreams, bindAddress: PROXY_ADDRESS });
    const created = await send(`${nginx.origin}/api/proof/notarize`, {
      body: JSON.stringify(notarizeBody()),
      ca: nginx.ca,
      localAddress: '127.0.0.20',
    });
    assert.equal(created.status, 200, created.text);
    proofId = (JSON.parse(created.text) as { proof: { id: string } }).proof.id;
  });
  after(async () => {
    await nginx?.stop();
    await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
    rmSync(nginxDir, { recursive: true, force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  const through = (pathname: string, options: Parameters<typeof send>[1] = {}) =>
    send(nginx.origin + pathname, { ca: nginx.ca, ...options });

  test('https through nginx reaches both instances, and pages link to the public https origin', async () => {
    const page = await through(`/proof/${proofId}`, { localAddress: '127.0.0.21' });
    assert.equal(page.status, 200);
    assert.match(page.text, new RegExp(`<link rel="canonical" href="${nginx.origin}/proof/${proofId}" />`));
    const proof = await through(`/api/proofs/${proofId}`, { localAddress: '127.0.0.21' });
    assert.equal(proof.status, 200);
    const { links } = JSON.parse(proof.text) as { links: { proof: string; verify: string } };
    assert.equal(new URL(links.verify, nginx.origin).href, `${nginx.origin}/api/verify/proofs/${proofId}`);
    // Round robin: the requests so far went to each instance.
    const upstreams = new Set(nginx.accessLog().map((line) => /upstream=(\S+)/.exec(line)?.[1]));
    assert.deepEqual(upstreams, new Set(instances.map((instance) => new URL(instance.baseUrl).host)));
    // Plain http is sent to https at the public origin.
    const plain = await send(`${nginx.httpOrigin}/proof/${proofId}`, { localAddress: '127.0.0.21' });
    assert.equal(plain.status, 308);
    assert.equal(plain.headers.location, `${nginx.origin}/proof/${proofId}`);
  });

  test('a body larger than the service takes reaches it and gets its own 413', async () => {
    const body = JSON.stringify(notarizeBody({ label: 'x'.repeat(200 * 1024) }));
    const answer = await through('/api/proof/notarize', { body, localAddress: '127.0.0.22' });
    assert.equal(answer.status, 413);
    assert.equal((JSON.parse(answer.text) as { error: { code: string } }).error.code, 'payload_too_large');
  });

  test('each client address behind the proxy has a budget of its own', async () => {
    const budget = async (localAddress: string) => {
      const seen: (number | string)[] = [];
      for (let i = 0; i <= RATE_LIMIT_MAX; i++)
        seen.push(remaining(await through(`/api/proofs/${proofId}`, { localAddress })));
      return seen;
    };
    assert.deepEqual(await budget('127.0.0.2'), [4, 3, 2, 1, 0, 429]);
    assert.deepEqual(await budget('127.0.0.3'), [4, 3, 2, 1, 0, 429]);
  });

  test('a forged X-Forwarded-For buys no budget, through nginx or sent to an instance directly', async () => {
    const forging = async (url: string, localAddress: string) => {
      const seen: (number | string)[] = [];
      for (let i = 0; i <= RATE_LIMIT_MAX; i++) {
        const headers = { 'x-forwarded-for': `198.51.100.${i + 1}` };
        seen.push(remaining(await send(url, { ca: nginx.ca, localAddress, headers })));
      }
      return seen;
    };
    // nginx replaces the header: every request counts for the client's own address.
    assert.deepEqual(
      await forging(`${nginx.origin}/api/proofs/${proofId}`, '127.0.0.6'),
      [4, 3, 2, 1, 0, 429],
    );
    // Straight to an instance from an address TRUST_PROXY does not name: the header is ignored.
    const direct = `${instances[0]!.baseUrl}/api/proofs/${proofId}`;
    assert.deepEqual(await forging(direct, '127.0.0.5'), [4, 3, 2, 1, 0, 429]);
    // From the trusted address the header is believed: each forwarded address starts a budget of its own.
    for (const client of ['203.0.113.7', '203.0.113.8']) {
      const headers = { 'x-forwarded-for': client };
      assert.equal(remaining(await send(direct, { localAddress: PROXY_ADDRESS, headers })), 4);
    }
  });

  test('a notarize an instance failed after taking it is retried on the other and makes one proof', async () => {
    // nginx of its own, the shipped file again, whose first instance sits behind a proxy that answers
    // 503 once and, the next time, lets the instance make the proof but loses its answer.
    const flaky = await startFlakyProxy(instances[1]!.baseUrl);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-nginx-'));
    const [httpsPort, httpPort] = [await freeNginxPort(), await freeNginxPort()];
    const upstreams: [string, string] = [new URL(flaky.url).host, new URL(instances[0]!.baseUrl).host];
    const second = await startNginx({ dir, httpsPort, httpPort, upstreams, bindAddress: PROXY_ADDRESS });
    try {
      flaky.failNext('unavailable', 'lose-answer');
      const answers = new Map<string, { status: number; replayed: boolean; id: string }>();
      for (let n = 0; flaky.requests.length < 2; n++) {
        assert.ok(n < 10, 'round robin reaches the proxied instance');
        const key = `retried-${randomUUID()}`;
        const answer = await send(`${second.origin}/api/proof/notarize`, {
          body: JSON.stringify(notarizeBody({ idempotencyKey: key })),
          ca: second.ca,
          localAddress: `127.0.0.${30 + n}`,
        });
        const body = JSON.parse(answer.text) as { idempotentReplay: boolean; proof: { id: string } };
        answers.set(key, { status: answer.status, replayed: body.idempotentReplay, id: body.proof?.id });
      }
      assert.deepEqual(
        flaky.requests.map((request) => request.fault),
        ['unavailable', 'lose-answer'],
      );
      assert.ok(
        [...answers.values()].every((answer) => answer.status === 200),
        JSON.stringify([...answers]),
      );
      const keyOf = (body: string) => (JSON.parse(body) as { idempotencyKey: string }).idempotencyKey;
      // The 503 was retried on the other instance, which made the proof.
      assert.equal(answers.get(keyOf(flaky.requests[0]!.body))?.replayed, false);
      // The lost answer too: the other instance found the proof already made under the key, and replayed it.
      const lost = keyOf(flaky.requests[1]!.body);
      assert.equal(answers.get(lost)?.replayed, true);
      const search = await through(`/api/proofs/search?idempotencyKey=${lost}`, {
        localAddress: '127.0.0.29',
      });
      assert.equal((JSON.parse(search.text) as { proofs: unknown[] }).proofs.length, 1);
    } finally {
      await second.stop();
      await flaky.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an instance stopped with SIGTERM under a stream of requests through nginx loses none', async (t) => {
    // A stream of clients, each at an address of its own (so none meets the rate limit): reads of a
    // proof and notarize requests, four at a time, until told to stop.
    const results = new Arrivals<{ status: number | string; upstream?: string }>();
    let running = true;
    let sent = 0;
    const client = async () => {
      while (running) {
        const n = sent++;
        const localAddress = `127.1.${n >> 8}.${(n & 255) + 1}`;
        const request =
          n % 2 === 0
            ? through(`/api/proofs/${proofId}`, { localAddress })
            : through('/api/proof/notarize', { body: JSON.stringify(notarizeBody()), localAddress });
        results.add(
          await request.then(
            (answer) => ({ status: answer.status }),
            (error: Error) => ({ status: error.message }),
          ),
        );
      }
    };
    const clients = Array.from({ length: 4 }, client);
    const answered = (count: number, what: string) =>
      results.until((items) => items.length >= count, { what, timeoutMs: 30_000 });

    await answered(20, 'requests through nginx before the stop');
    const victim = instances[1]!;
    const exited = once(victim.child, 'exit') as Promise<[number | null]>;
    // A request held in flight keeps the instance draining while the stream goes on.
    const held = deferredPost(`${victim.baseUrl}/api/proof/notarize`, JSON.stringify(notarizeBody()));
    await within(held.accepted, { what: 'the instance takes the held request' });
    const stopping = printed(victim.child, 'stopping: finishing in-flight requests');
    victim.child.kill('SIGTERM');
    await stopping;
    const atDrain = results.items.length;
    await answered(atDrain + 40, 'requests through nginx while the instance drains');
    assert.equal(victim.child.exitCode, null, 'the instance was still draining');
    held.send();
    const heldAnswer = await within(held.answer, { what: 'the held request is answered' });
    assert.ok('status' in heldAnswer && heldAnswer.status === 200, JSON.stringify(heldAnswer));
    const [code] = await within(exited, { what: 'the instance exits', timeoutMs: 30_000 });
    assert.equal(code, 0);
    const atExit = results.items.length;
    await answered(atExit + 40, 'requests through nginx after the instance exited');
    running = false;
    await Promise.all(clients);

    const failed = results.items.filter((result) => result.status !== 200);
    assert.deepEqual(failed, [], `${failed.length} of ${results.items.length} requests failed`);
    const log = nginx.accessLog();
    const retried = log.flatMap((line) => /upstream_status=(\S+, \S+)/.exec(line)?.[1] ?? []);
    t.diagnostic(
      `${results.items.length} requests, ${atExit - atDrain} during the drain; retried by nginx after: ${retried.join(' | ')}`,
    );
    // After the exit, only the other instance answers.
    const survivor = new URL(instances[0]!.baseUrl).host;
    const last = log.slice(-20).map((line) => /upstream=(.*) upstream_status/.exec(line)?.[1] ?? '');
    assert.ok(
      last.every((upstreams) => upstreams.endsWith(survivor)),
      last.join('\n'),
    );
  });
});
