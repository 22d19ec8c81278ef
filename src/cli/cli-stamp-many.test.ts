/**
 * `hashproof stamp` of many files through batches (docs/cli.md, "Many files"), against a service with
 * the default rate limit (60 requests a minute per client): no 429 reaches the user, every proof file
 * verifies, the evidence is fetched once a run rather than once a file (a counting proxy shows what
 * the service was asked), and an interrupted run resumed makes no proof twice.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { verifyProofFile, type ManifestKey } from '../client/client.ts';
import { backUp } from '../../test/db-backup.ts';
import { api, makeDataDir, notarizeBody, startServer, type TestServer } from '../../test/helper.ts';
import { finished, run, start } from '../../test/process.ts';
import { eventually, within } from '../../test/wait.ts';
import { CLI } from './cli-test-setup.ts';
import { startCountingProxy, type CountingProxy } from './stamp-many-test-proxy.ts';

/** The service's default rate limit (docs/api.md): the tests run under it, window and all. */
const DEFAULT_LIMIT = { RATE_LIMIT_MAX: '60', RATE_LIMIT_WINDOW_MS: '60000' };

/** `count` small files of distinct content in a new directory. */
function filesIn(work: string, name: string, count: number): string[] {
  const dir = path.join(work, name);
  mkdirSync(dir);
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, `part-${String(i).padStart(5, '0')}.bin`);
    writeFileSync(file, `${name} part ${i} ${Math.random()}`);
    files.push(file);
  }
  return files;
}

const envOf = (url: string, work: string) => ({
  PATH: process.env.PATH,
  HASHPROOF_URL: url,
  HASHPROOF_STATE_DIR: path.join(work, 'state'),
});

/** The service's keys, read from it directly (one request). */
async function keysOf(server: TestServer): Promise<ManifestKey[]> {
  const answer = await fetch(`${server.baseUrl}/.well-known/hashproof-keys.json`);
  assert.equal(answer.status, 200);
  return ((await answer.json()) as { keys: ManifestKey[] }).keys;
}

/** Every file's proof file verifies offline with the service's keys (the verdict `hashproof verify` gives). */
async function assertAllVerify(files: string[], keys: ManifestKey[]): Promise<void> {
  for (const file of files) {
    const document: unknown = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    const verdict = await verifyProofFile(document, { path: file }, keys);
    assert.ok(verdict.verified, `${file}: ${verdict.problems.join('; ')}`);
    assert.ok(
      verdict.checks.some((c) => c.name === 'inclusion' && c.status === 'valid'),
      file,
    );
  }
}

async function proofCount(server: TestServer): Promise<number> {
  const row = await server.ctx.database.db
    .selectFrom('proofs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const batchesSeen = (proxy: CountingProxy) =>
  proxy.seen.filter((r) => r.method === 'POST' && r.path === '/api/proof/batch');

describe('hashproof stamp of many files', () => {
  test('2,000 files against the default rate limit: batches, no 429, evidence once a run, every proof file verifies', async () => {
    const server = await startServer({ env: DEFAULT_LIMIT });
    const proxy = await startCountingProxy(server.baseUrl);
    const work = makeDataDir();
    try {
      const files = filesIn(work, 'release', 2000);
      const stamped = await run(process.execPath, [CLI, 'stamp', path.dirname(files[0]!)], {
        env: envOf(proxy.url, work),
      });
      assert.equal(stamped.code, 0, stamped.stderr);
      assert.equal(stamped.stdout.match(/^stamped /gm)?.length, 2000);
      assert.deepEqual(
        proxy.seen.filter((r) => r.status === 429),
        [],
        'the command waits for the rate limit rather than meeting it',
      );
      assert.deepEqual(
        batchesSeen(proxy).map((r) => r.items),
        [1000, 1000],
      );
      // No request names a proof: tokens came with the batches, places and paths from the tiles.
      assert.deepEqual(
        proxy.seen.filter((r) => r.path.startsWith('/api/proofs/')),
        [],
      );
      const once = (p: string) => proxy.seen.filter((r) => r.path === p).length;
      assert.equal(once('/.well-known/hashproof-keys.json'), 1);
      assert.equal(once('/api/tsa/certs.pem'), 1);
      // Batches, the keys, the chain, a few checkpoints and tiles: a fraction of one request a file.
      assert.ok(proxy.seen.length < 100, `${proxy.seen.length} requests for 2,000 files`);
      await assertAllVerify(files, await keysOf(server));
      for (const file of [files[0]!, files[1999]!]) {
        const verified = await run(process.execPath, [CLI, 'verify', file], { env: envOf(proxy.url, work) });
        assert.equal(verified.code, 0, verified.stdout + verified.stderr);
        assert.match(verified.stdout, /^ok {3}inclusion: Leaf \d+ is included/m);
      }
    } finally {
      await proxy.close();
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('a limit smaller than the run: batches sized to a window, the command waits for each reset, never a 429', async () => {
    // 8 requests a 2 s window (shortened from a minute so the test waits seconds): the run needs about
    // thirty, so it must wait for the window several times.
    const server = await startServer({ env: { RATE_LIMIT_MAX: '8', RATE_LIMIT_WINDOW_MS: '2000' } });
    const proxy = await startCountingProxy(server.baseUrl);
    const work = makeDataDir();
    try {
      const files = filesIn(work, 'paced', 900);
      const keys = await keysOf(server); // before the run: afterwards its window may be spent
      const stamped = await run(process.execPath, [CLI, 'stamp', path.dirname(files[0]!)], {
        env: envOf(proxy.url, work),
      });
      assert.equal(stamped.code, 0, stamped.stderr);
      assert.equal(stamped.stdout.match(/^stamped /gm)?.length, 900);
      assert.deepEqual(
        batchesSeen(proxy).map((r) => r.items),
        [800, 100],
        'a batch is at most what one window allows (8 × 100 items)',
      );
      assert.ok(proxy.seen.length > 8, `${proxy.seen.length} requests: more than one window holds`);
      assert.deepEqual(
        proxy.seen.filter((r) => r.status === 429),
        [],
      );
      await assertAllVerify(files, keys);
    } finally {
      await proxy.close();
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('tiles that do not prove a proof to the signed checkpoint end the command before its proof file is written', async () => {
    const server = await startServer();
    const proxy = await startCountingProxy(server.baseUrl);
    const work = makeDataDir();
    try {
      const files = filesIn(work, 'tampered', 3);
      // Every leaf hash tile with its last byte flipped: the paths built from them lead elsewhere.
      proxy.alter((url, body) =>
        url.startsWith('/log/tile/0/')
          ? Buffer.concat([body.subarray(0, -1), Buffer.from([body.at(-1)! ^ 1])])
          : body,
      );
      const stamped = await run(process.execPath, [CLI, 'stamp', path.dirname(files[0]!)], {
        env: envOf(proxy.url, work),
      });
      assert.equal(stamped.code, 1, stamped.stdout + stamped.stderr);
      assert.match(
        stamped.stderr,
        /^log tiles do not match the checkpoint: \S+ at size \d+: they do not prove proof proof_\w+ at entry \d+$/m,
      );
      assert.deepEqual(
        files.filter((file) => existsSync(`${file}.proof.json`)),
        [],
      );
    } finally {
      await proxy.close();
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('tiles that do not hash to a new checkpoint are the log failing a check, not a fork and not unchecked', async () => {
    const server = await startServer();
    const proxy = await startCountingProxy(server.baseUrl);
    const work = makeDataDir();
    try {
      const first = filesIn(work, 'before', 2);
      const stamped = await run(process.execPath, [CLI, 'stamp', path.dirname(first[0]!)], {
        env: envOf(proxy.url, work),
      });
      assert.equal(stamped.code, 0, stamped.stderr);
      // The checkpoint is remembered; the next run proves the log grew from it, from the tiles.
      const files = filesIn(work, 'after', 2);
      proxy.alter((url, body) =>
        url.startsWith('/log/tile/0/')
          ? Buffer.concat([body.subarray(0, -1), Buffer.from([body.at(-1)! ^ 1])])
          : body,
      );
      const tampered = await run(process.execPath, [CLI, 'stamp', path.dirname(files[0]!)], {
        env: envOf(proxy.url, work),
      });
      assert.equal(tampered.code, 1, tampered.stdout + tampered.stderr);
      assert.match(
        tampered.stderr,
        /^log tiles do not match the checkpoint: \S+ at size 4: the tree of its hash tiles has root /m,
      );
      assert.doesNotMatch(tampered.stderr, /log fork detected|could not check/);
    } finally {
      await proxy.close();
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('a log that forked since the last run is caught at the first checkpoint, from its tiles, before any batch', async () => {
    // One public name across restarts: one log origin, signed by the same keys.
    const env = { PUBLIC_BASE_URL: 'https://proofs.example.test' };
    let server = await startServer({ env });
    await server.close();
    const emptyLog = backUp(server.dataDir);
    const work = makeDataDir();
    try {
      server = await startServer({ dataDir: server.dataDir, env });
      const before = filesIn(work, 'seen', 3);
      const seen = await run(process.execPath, [CLI, 'stamp', path.dirname(before[0]!)], {
        env: envOf(server.baseUrl, work),
      });
      assert.equal(seen.code, 0, seen.stderr);
      // The service restored from its backup of an empty log, its record of the log moved aside, and let
      // go on: another history under the same name and key.
      await server.close();
      emptyLog.restore();
      const keys = path.join(server.dataDir, 'keys');
      for (const name of readdirSync(keys).filter((n) => n.startsWith('log-checkpoint-')))
        renameSync(path.join(keys, name), path.join(server.dataDir, name));
      server = await startServer({ dataDir: server.dataDir, env });
      for (let i = 0; i < 5; i++)
        assert.equal(
          (await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).status,
          200,
        );
      const forked = server;
      await eventually(() => forked.ctx.log.latest(5), {
        what: 'the other history reaches 5 entries',
        until: (checkpoint) => (checkpoint?.treeSize ?? 0) >= 5,
      });
      const proxy = await startCountingProxy(server.baseUrl);
      try {
        const files = filesIn(work, 'after', 2);
        const caught = await run(process.execPath, [CLI, 'stamp', path.dirname(files[0]!)], {
          env: envOf(proxy.url, work),
        });
        assert.equal(caught.code, 1, caught.stdout + caught.stderr);
        assert.match(caught.stderr, /^log fork detected: proofs\.example\.test\/log: .*size 3, root /m);
        assert.deepEqual(batchesSeen(proxy), [], 'nothing is sent to a log that failed its check');
        assert.ok(
          !proxy.seen.some((r) => r.path === '/api/log/consistency'),
          'the proof came from the tiles',
        );
      } finally {
        await proxy.close();
      }
    } finally {
      await server.close();
      server.cleanup();
      emptyLog.discard();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('a file the service refuses fails alone: the others get their proof files, the command exits 1', async () => {
    const server = await startServer();
    const work = makeDataDir();
    try {
      const dir = path.join(work, 'mixed');
      mkdirSync(dir);
      // Its name, the label, is over the 120 characters a label may have.
      const names = ['a.bin', `${'x'.repeat(130)}.bin`, 'b.bin'];
      for (const name of names) writeFileSync(path.join(dir, name), `content of ${name}`);
      const stamped = await run(process.execPath, [CLI, 'stamp', dir], { env: envOf(server.baseUrl, work) });
      assert.equal(stamped.code, 1, stamped.stdout + stamped.stderr);
      assert.match(
        stamped.stderr,
        /^hashproof: the service refused 1 of 3 files; the first: \S+x{130}\.bin: /m,
      );
      assert.equal(stamped.stdout.match(/^stamped /gm)?.length, 2);
      const written = names.map((name) => existsSync(path.join(dir, `${name}.proof.json`)));
      assert.deepEqual(written, [true, false, true]);
    } finally {
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('an interrupted run resumed: no proof made twice, the missing proof files written, no batch slot spent on complete ones', async () => {
    const server = await startServer({ env: DEFAULT_LIMIT });
    const proxy = await startCountingProxy(server.baseUrl);
    const work = makeDataDir();
    try {
      const files = filesIn(work, 'archive', 1200);
      const dir = path.dirname(files[0]!);
      // The first batch's answer comes once its proofs are in the log, so its proof files are written
      // before the second batch goes; the service takes that one in and never answers.
      proxy.delay('POST', '/api/proof/batch', 1, () =>
        eventually(() => server.ctx.log.latest(1000), {
          what: 'the first batch enters the log',
          until: (checkpoint) => (checkpoint?.treeSize ?? 0) >= 1000,
          timeoutMs: 60_000,
        }),
      );
      const secondBatch = proxy.hold('POST', '/api/proof/batch', 2);
      const first = start(process.execPath, [CLI, 'stamp', dir], { env: envOf(proxy.url, work) });
      const ended = finished(first);
      await within(secondBatch, { what: 'the second batch reaches the service', timeoutMs: 120_000 });
      first.kill('SIGKILL');
      assert.equal((await ended).signal, 'SIGKILL');
      const written = files.filter((file) => existsSync(`${file}.proof.json`));
      assert.equal(written.length, 1000, 'the first batch’s proof files were written as their proofs came');
      assert.equal(await proofCount(server), 1200, 'the second batch was made, though never answered');

      const before = batchesSeen(proxy).length;
      const resumed = await run(process.execPath, [CLI, 'stamp', dir, '--json'], {
        env: envOf(proxy.url, work),
      });
      assert.equal(resumed.code, 0, resumed.stderr);
      const results = JSON.parse(resumed.stdout) as { file: string; idempotentReplay: boolean }[];
      assert.equal(results.length, 1200);
      assert.ok(
        results.every((r) => r.idempotentReplay),
        'every proof was made before',
      );
      assert.deepEqual(
        batchesSeen(proxy)
          .slice(before)
          .map((r) => r.items),
        [200],
        'only the files without a complete proof file are sent',
      );
      assert.equal(await proofCount(server), 1200, 'no proof made twice');
      assert.deepEqual(
        proxy.seen.filter((r) => r.status === 429),
        [],
      );
      await assertAllVerify(files, await keysOf(server));

      // A third run finds every proof file complete: it sends no batch at all.
      const third = await run(process.execPath, [CLI, 'stamp', dir], { env: envOf(proxy.url, work) });
      assert.equal(third.code, 0, third.stderr);
      assert.equal(third.stdout.match(/^already stamped /gm)?.length, 1200);
      assert.equal(batchesSeen(proxy).length, before + 1);
    } finally {
      await proxy.close();
      await server.close();
      server.cleanup();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
