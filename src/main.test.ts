import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { freePort, makeDataDir, notarizeBody, testDatabaseUrl } from '../test/helper.ts';

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

async function waitForHealth(baseUrl: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error('the service exited');
    try {
      if ((await fetch(`${baseUrl}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the service did not become healthy');
}

test('SIGTERM finishes in-flight requests, then exits 0; the proofs are on disk', async () => {
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
  await waitForHealth(baseUrl, child);
  const inFlight = Array.from({ length: 20 }, () =>
    fetch(`${baseUrl}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(notarizeBody()),
    }).then(
      async (r) => ({ status: r.status, body: (await r.json()) as { proof: { id: string } } }),
      // A request the stopping server never accepted fails at the socket: it was not acknowledged.
      () => ({ status: 0, body: { proof: { id: '' } } }),
    ),
  );
  await new Promise((resolve) => setTimeout(resolve, 5));
  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0, output());
  const settled = await Promise.allSettled(inFlight);
  const acknowledged = settled.flatMap((r) =>
    r.status === 'fulfilled' && r.value.status === 200 ? [r.value.body.proof.id] : [],
  );

  const again = start(env);
  try {
    await waitForHealth(baseUrl, again.child);
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
