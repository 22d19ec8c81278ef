/**
 * `hashproof stamp` of many files against a service that limits its clients: the command pauses as the
 * service's Retry-After says, and stamps every file (docs/cli.md, "Retries").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHostileApi } from '../../test/hostile-api.ts';
import { makeDataDir, startServer } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { CLI } from './cli-test-setup.ts';

test('stamp of 20 files under a small rate limit pauses as the service says and stamps them all', async () => {
  // 5 requests per 2 s window: the 20 files go in one batch, and the key manifest, the checkpoints, the
  // TSA chain and the log's tiles take more than 5 requests, so the limit is met along the way.
  const server = await startServer({ env: { RATE_LIMIT_MAX: '5', RATE_LIMIT_WINDOW_MS: '2000' } });
  // A service that answers genuinely, in front of it, only to count the 429s. It passes no RateLimit
  // field on, so the command cannot pace itself: it meets the limit and waits as Retry-After says.
  const counter = await startHostileApi({ upstream: server.baseUrl });
  const work = makeDataDir();
  try {
    const dir = path.join(work, 'release');
    mkdirSync(dir);
    for (let i = 0; i < 20; i++) writeFileSync(path.join(dir, `part-${i}.bin`), `part ${i} ${Math.random()}`);
    const result = await run(process.execPath, [CLI, 'stamp', dir], {
      env: {
        PATH: process.env.PATH,
        HASHPROOF_URL: counter.url,
        HASHPROOF_STATE_DIR: path.join(work, 'state'),
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.match(/^stamped /gm)?.length, 20, result.stdout);
    for (let i = 0; i < 20; i++) assert.ok(existsSync(path.join(dir, `part-${i}.bin.proof.json`)));
    const limited = counter.requests.filter((r) => r.status === 429).length;
    assert.ok(limited > 0, 'the service answered 429 along the way (else this test proves nothing)');
  } finally {
    await counter.close();
    await server.close();
    server.cleanup();
    rmSync(work, { recursive: true, force: true });
  }
});
