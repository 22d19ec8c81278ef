import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as raceWindow } from 'node:timers/promises';
import { freePort, makeDataDir, notarizeBody, testDatabaseUrl } from '../test/helper.ts';
import { deferredPost, stopsGracefully } from '../test/graceful-stop.ts';
import { healthy, printed, serving, START_TIMEOUT_MS } from '../test/process.ts';

const MAIN = path.join(import.meta.dirname, 'main.ts');

function start(env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

test('SIGTERM answers every request it had accepted, then exits 0; the proofs are on disk', async (t) => {
  const dataDir = makeDataDir();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    DATABASE_URL: await testDatabaseUrl(dataDir),
    SIGNING_KEYS_DIR: `${dataDir}/keys`,
    RATE_LIMIT_MAX: '0',
  };
  const { child, output } = start(env);
  await serving(child, baseUrl);
  // Requests the server has taken (headers read, 100 Continue sent) whose bodies come only once it stops.
  const accepted = Array.from({ length: 10 }, () =>
    deferredPost(`${baseUrl}/api/proof/notarize`, JSON.stringify(notarizeBody())),
  );
  await Promise.all(accepted.map((post) => post.accepted));
  // Requests racing the signal: the server may take them or not.
  const racing = Array.from({ length: 20 }, () =>
    fetch(`${baseUrl}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(notarizeBody()),
    }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      // One the stopping server never accepted fails at the socket: it was not acknowledged.
      () => ({ status: 0, body: '' }),
    ),
  );
  // Part of the test: the signal comes while those requests are on their way.
  await raceWindow(5);
  const stopping = printed(child, 'stopping: finishing in-flight requests');
  child.kill('SIGTERM');
  await stopping;
  assert.equal(child.exitCode, null, 'it waits for the requests it accepted');
  for (const post of accepted) post.send();
  const drained = await Promise.all(accepted.map((post) => post.answer));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0, output());
  // Every request accepted before the signal was answered during the drain: none was reset.
  for (const answer of drained)
    assert.ok('status' in answer && answer.status === 200, JSON.stringify(answer));
  const raced = await Promise.all(racing);
  for (const answer of raced) {
    const body = answer.body ? (JSON.parse(answer.body) as { error?: { code: string } }) : {};
    assert.ok(
      answer.status === 0 || answer.status === 200 || body.error?.code === 'service_unavailable',
      `${answer.status} ${answer.body.slice(0, 200)}`,
    );
  }
  const acknowledged = [...drained, ...raced].flatMap((answer) =>
    'status' in answer && answer.status === 200
      ? [(JSON.parse(answer.body) as { proof: { id: string } }).proof.id]
      : [],
  );
  assert.ok(acknowledged.length >= accepted.length);
  const count = (status: number) => raced.filter((answer) => answer.status === status).length;
  t.diagnostic(
    `${drained.length} accepted requests answered 200 during the drain; of ${raced.length} racing the ` +
      `signal: ${count(200)} answered 200, ${count(503)} 503, ${count(0)} not accepted`,
  );

  const again = start(env);
  try {
    await serving(again.child, baseUrl);
    for (const id of acknowledged) {
      const res = await fetch(`${baseUrl}/api/verify/proofs/${id}`);
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { verified: boolean }).verified, true);
    }
  } finally {
    again.child.kill('SIGTERM');
    await once(again.child, 'exit');
  }
});

test('node src/main.ts: during the drain /health answers 503 shutting_down; held requests finish, exit 0, nothing left', async (t) => {
  const dataDir = makeDataDir();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const { child } = start({
    PORT: String(port),
    DATABASE_URL: await testDatabaseUrl(dataDir),
    SIGNING_KEYS_DIR: `${dataDir}/keys`,
    RATE_LIMIT_MAX: '0',
  });
  try {
    await serving(child, baseUrl);
    const { drainMs } = await stopsGracefully(child, baseUrl);
    t.diagnostic(`exited ${Math.round(drainMs)} ms after the held requests were released`);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('log lines are buffered, yet each reaches standard output within a moment, and all of them at exit', async () => {
  const dataDir = makeDataDir();
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const { child, output } = start({
    PORT: String(port),
    DATABASE_URL: await testDatabaseUrl(dataDir),
    SIGNING_KEYS_DIR: `${dataDir}/keys`,
  });
  try {
    await serving(child, baseUrl);
    // One request, far less than the buffer holds: its line must still come out, within the flush interval.
    const marker = `/api/proofs/prf_${'0'.repeat(26)}`;
    const lineOut = printed(child, `"url":"${marker}"`, 5_000);
    assert.equal((await fetch(`${baseUrl}${marker}`)).status, 404);
    await lineOut;
    // Lines logged just before exit (many requests, then the stop) are all written out.
    const urls = Array.from({ length: 50 }, (_, i) => `/api/proofs/search?q=exit-${i}`);
    for (const url of urls) assert.equal((await fetch(`${baseUrl}${url}`)).status, 200);
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  const lines = output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { url?: string; msg?: string });
  const logged = new Set(lines.map((line) => line.url));
  for (let i = 0; i < 50; i++) assert.ok(logged.has(`/api/proofs/search?q=exit-${i}`), `line ${i} was lost`);
  assert.ok(lines.at(-1)?.msg !== undefined);
});

test(
  'a standard output closed by its reader neither stalls requests nor keeps SIGTERM from stopping the service',
  // A start may take minutes on a busy machine (START_TIMEOUT_MS); what follows it, a minute.
  { timeout: START_TIMEOUT_MS + 60_000 },
  async (t) => {
    const dataDir = makeDataDir();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        DATABASE_URL: await testDatabaseUrl(dataDir),
        SIGNING_KEYS_DIR: `${dataDir}/keys`,
        RATE_LIMIT_MAX: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let errors = '';
    const told = new Promise<void>((resolve) =>
      child.stderr.on('data', (chunk: Buffer) => {
        errors += chunk.toString();
        if (errors.includes('standard output failed')) resolve();
      }),
    );
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      // As `… | head -n 1` does: read the first line, then close the pipe.
      await printed(child, '\n', START_TIMEOUT_MS);
      child.stdout.destroy();
      // A few short lines, written by the 100 ms flush (the write that used to retry for ever on EPIPE);
      // with its output closed, the service can only be asked whether it is up.
      await healthy(baseUrl, child);
      await told;
      // Far more log lines than any pipe or buffer holds (about 2 KB each, 1.2 MB in all).
      const padding = 'x'.repeat(2000);
      const statuses: number[] = [];
      for (let round = 0; round < 60; round++) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            fetch(`${baseUrl}/nothing/${round}-${i}/${padding}`, { signal: AbortSignal.timeout(5_000) }),
          ),
        );
        for (const res of answers) {
          statuses.push(res.status);
          await res.body?.cancel();
        }
      }
      assert.equal(statuses.length, 600);
      assert.ok(
        statuses.every((status) => status === 404),
        'every request is answered',
      );
      assert.equal((await fetch(`${baseUrl}/health`)).status, 200);
      const signalled = performance.now();
      child.kill('SIGTERM');
      const [code, signal] = await exited;
      assert.equal(code, 0, `exit ${code} ${signal}: ${errors}`);
      t.diagnostic(`stopped ${Math.round(performance.now() - signalled)} ms after SIGTERM`);
      // Told once on standard error, not once per line.
      assert.equal(errors.match(/standard output failed \(EPIPE\)/g)?.length, 1, errors);
    } finally {
      // Should it hang, it must not outlive the test.
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  },
);

test('bad configuration stops start-up with one line per problem and exit code 2', async () => {
  const { child, output } = start({ PORT: 'abc', PAYMENT_MODE: 'x402' });
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 2);
  const lines = output().trim().split('\n');
  assert.deepEqual(
    lines.map((line) => line.split(':').slice(0, 3).join(':').trim()),
    [
      'hashproof: configuration: PORT',
      'hashproof: configuration: X402_PAY_TO',
      'hashproof: configuration: X402_FACILITATOR_URL',
    ],
  );
});
