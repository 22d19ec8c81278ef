import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startAlteringProxy } from '../../test/altering-proxy.ts';
import { startHostileApi } from '../../test/hostile-api.ts';
import { backUp, type Backup } from '../../test/db-backup.ts';
import { api, makeDataDir, notarizeBody, startServer, type TestServer } from '../../test/helper.ts';
import { finished, printed, run, start, START_TIMEOUT_MS, type Run } from '../../test/process.ts';
import { eventually } from '../../test/wait.ts';
import { leafHash } from '../core/merkle.ts';
import { formatVerifierKey } from '../core/signed-note.ts';
import { parseEntryBundle } from '../core/tlog-tiles.ts';
import { readCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
import { CLI } from './cli-test-setup.ts';

/** Both services answer under one public name: their logs have one origin, and the same keys sign them. */
const env = { PUBLIC_BASE_URL: 'https://proofs.example.test' };
const ORIGIN = 'proofs.example.test/log';
const work = makeDataDir();
let states = 0;

/** A state directory of its own for one run of the command, holding what `seed` remembers, if given. */
function stateDir(seed?: string): string {
  const dir = path.join(work, `state-${++states}`);
  if (seed === undefined) mkdirSync(dir);
  else cpSync(seed, dir, { recursive: true });
  return dir;
}

function hashproof(baseUrl: string, state: string, args: string[]): Promise<Run> {
  return run(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, HASHPROOF_URL: baseUrl, HASHPROOF_STATE_DIR: state },
  });
}

/** What the command remembers of the log in a state directory. */
function remembered(state: string): { checkpoint: LogCheckpoint; monitoredSize: number } {
  const files = readdirSync(state).filter((name) => name.startsWith('log-') && name.endsWith('.json'));
  assert.equal(files.length, 1, 'one log remembered');
  const stored = JSON.parse(readFileSync(path.join(state, files[0]!), 'utf8'));
  return { checkpoint: readCheckpoint(stored.checkpoint), monitoredSize: stored.monitoredSize };
}

const rootOf = (checkpoint: LogCheckpoint) => checkpoint.rootHash.toString('base64');

async function latest(server: TestServer): Promise<LogCheckpoint> {
  const res = await eventually(() => api(server.baseUrl, '/log/checkpoint'), {
    what: 'the log has a checkpoint',
    until: (answer) => answer.status === 200,
  });
  return readCheckpoint(res.text);
}

/** Grows the log of `server` to exactly `size` entries; returns the checkpoint of that size. */
async function growTo(server: TestServer, size: number): Promise<LogCheckpoint> {
  const current = (await latest(server)).size;
  assert.ok(current <= size, `the log has ${current} entries, more than ${size}`);
  for (let i = current; i < size; i++) {
    const res = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
    assert.equal(res.status, 200, res.text);
  }
  return eventually(() => latest(server), {
    what: `the log reaches ${size} entries`,
    until: (checkpoint) => checkpoint.size === size,
  });
}

let fileNumber = 0;
function newFile(): string {
  const file = path.join(work, `file-${++fileNumber}.txt`);
  writeFileSync(file, `content ${fileNumber} ${Math.random()}`);
  return file;
}

/** The fork line: it names the log, the checkpoint served and the one remembered, sizes and roots. */
function assertFork(result: Run, known: LogCheckpoint, served?: LogCheckpoint): void {
  assert.equal(result.code, 1, result.stdout + result.stderr);
  const line = result.stderr.split('\n').find((l) => l.startsWith('log fork detected:'));
  assert.ok(line !== undefined, `no fork line in ${result.stderr}`);
  assert.ok(line.includes(ORIGIN), line);
  assert.ok(line.includes(`size ${known.size}, root ${rootOf(known)}`), line);
  if (served !== undefined) assert.ok(line.includes(`size ${served.size}, root ${rootOf(served)}`), line);
  else
    assert.match(
      line,
      /checkpoint \(size \d+, root [A-Za-z0-9+/]{43}=\) inconsistent with the one seen before/,
    );
}

describe('a command that has seen a log', () => {
  let a: TestServer;
  /** A's database when its log had 3 entries (a backup an operator may restore). */
  let backup: Backup;
  /** A state directory that remembers A's checkpoint of 6 entries (monitored up to it). */
  let seed: string;
  let seen: LogCheckpoint;
  /** A file stamped at A: `verify --online` asks the service about its proof. */
  let stamped: string;
  const servers: TestServer[] = [];

  before(async () => {
    a = await startServer({ env });
    await growTo(a, 3);
    await a.close();
    backup = backUp(a.dataDir);
    a = await startServer({ dataDir: a.dataDir, env });
    stamped = newFile();
    assert.equal((await hashproof(a.baseUrl, stateDir(), ['stamp', stamped])).code, 0);
    seen = await growTo(a, 6);
    seed = stateDir();
    const first = await hashproof(a.baseUrl, seed, ['monitor', '--once']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /the first checkpoint seen of this log; 6 new entries match the tiles/);
    assert.deepEqual(remembered(seed), { checkpoint: seen, monitoredSize: 6 });
  });
  after(async () => {
    for (const server of [a, ...servers]) {
      await server.close();
      server.cleanup();
    }
    backup.discard();
    rmSync(work, { recursive: true, force: true });
  });

  test('consistent growth is accepted and remembered; an older consistent checkpoint is told, not remembered', async () => {
    const state = stateDir(seed);
    const grown = await growTo(a, 8);
    const monitored = await hashproof(a.baseUrl, state, ['monitor', '--once']);
    assert.equal(monitored.code, 0, monitored.stderr);
    assert.match(monitored.stdout, /consistent with size 6 seen before; 2 new entries match the tiles/);
    assert.deepEqual(remembered(state), { checkpoint: grown, monitoredSize: 8 });

    const stamp = await hashproof(a.baseUrl, state, ['stamp', newFile()]);
    assert.equal(stamp.code, 0, stamp.stderr);
    const afterStamp = remembered(state).checkpoint;
    assert.ok(afterStamp.size >= 8, 'remembered the checkpoint of the stamp');
    const verified = await hashproof(a.baseUrl, state, ['verify', stamped, '--online']);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.ok(remembered(state).checkpoint.size >= afterStamp.size);

    // A service that serves its older checkpoint (a lagging replica) still has to prove it consistent.
    const proxy = await startAlteringProxy(a.baseUrl);
    try {
      proxy.alter((url, body) => (url === '/log/checkpoint' ? Buffer.from(seen.note) : body));
      const before = remembered(state);
      for (const args of [
        ['monitor', '--once'],
        ['verify', stamped, '--online'],
      ]) {
        const older = await hashproof(proxy.url, state, args);
        assert.equal(older.code, 0, older.stdout + older.stderr);
        assert.match(
          older.stdout + older.stderr,
          /the service served an older checkpoint of proofs\.example\.test\/log \(size 6, /,
        );
        assert.deepEqual(remembered(state), before, 'the larger checkpoint stays remembered');
      }
    } finally {
      await proxy.close();
    }
  });

  test('monitor follows the log, a line per new checkpoint; a pinned manifest with another log key is refused', async () => {
    const state = stateDir(seed);
    const size = (await latest(a)).size;
    const child = start(process.execPath, [CLI, 'monitor', '--interval-ms', '50'], {
      env: { PATH: process.env.PATH, HASHPROOF_URL: a.baseUrl, HASHPROOF_STATE_DIR: state },
    });
    try {
      // Its first line comes once the command has started: a start may take minutes on a busy machine.
      await printed(child, `size ${size}, root`, START_TIMEOUT_MS);
      const next = printed(child, `size ${size + 2}, root`);
      await growTo(a, size + 2);
      assert.match(
        await next,
        /consistent with size \d+ seen before; \d+ new entr(y matches|ies match) the tiles/,
      );
    } finally {
      child.kill('SIGTERM');
      await finished(child);
    }
    assert.equal(remembered(state).monitoredSize, size + 2);

    const manifest = (await api(a.baseUrl, '/.well-known/hashproof-keys.json')).body as {
      keys: { use: string; verifierKey?: string }[];
    };
    const pinned = path.join(work, 'pinned-keys.json');
    writeFileSync(pinned, JSON.stringify(manifest));
    const trusted = await hashproof(a.baseUrl, stateDir(), ['monitor', '--once', '--keys', pinned]);
    assert.equal(trusted.code, 0, trusted.stderr);
    const impostor = generateKeyPairSync('ed25519').publicKey;
    for (const key of manifest.keys)
      if (key.use === 'log') key.verifierKey = formatVerifierKey(ORIGIN, impostor);
    writeFileSync(pinned, JSON.stringify(manifest));
    const refused = await hashproof(a.baseUrl, stateDir(), ['monitor', '--once', '--keys', pinned]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^log checkpoint rejected: it does not verify with the log key proofs\.example\.test\/log\+/,
    );
    const usage = await hashproof(a.baseUrl, stateDir(), ['monitor', '--interval-ms', 'soon']);
    assert.equal(usage.code, 2);
  });

  test('monitor catches tiles that do not hash to the checkpoint', async () => {
    const proxy = await startAlteringProxy(a.baseUrl);
    try {
      const size = (await latest(a)).size;
      const entriesPath = `/log/tile/entries/000.p/${size}`;
      const tilePath = `/log/tile/0/000.p/${size}`;
      const bundle = Buffer.from(await (await fetch(a.baseUrl + entriesPath)).arrayBuffer());
      const flipLast = (body: Buffer) =>
        Buffer.concat([body.subarray(0, -1), Buffer.from([body.at(-1)! ^ 1])]);
      // Entry 1 rewritten, and its leaf hash in the tile with it: only the root can tell.
      const entries = parseEntryBundle(bundle);
      const rewritten = Buffer.from(entries[1]!);
      rewritten[rewritten.length - 2]! ^= 1;
      const offset = 2 + entries[0]!.length + 2;
      const rewrittenBundle = Buffer.concat([
        bundle.subarray(0, offset),
        rewritten,
        bundle.subarray(offset + rewritten.length),
      ]);
      const cases: [string, (url: string, body: Buffer) => Buffer, RegExp][] = [
        [
          'an entry changed',
          (url, body) => (url === entriesPath ? flipLast(body) : body),
          /entry \d+ does not hash to its leaf hash in tile 0\/000\.p\//,
        ],
        [
          'a leaf hash changed',
          (url, body) => (url === tilePath ? flipLast(body) : body),
          /entry \d+ does not hash to its leaf hash/,
        ],
        [
          'an entry and its leaf hash changed together',
          (url, body) => {
            if (url === entriesPath) return rewrittenBundle;
            if (url !== tilePath) return body;
            const tile = Buffer.from(body);
            leafHash(rewritten).copy(tile, 32);
            return tile;
          },
          /the tree of the tiles has root /,
        ],
      ];
      for (const [name, alteration, problem] of cases) {
        proxy.alter(alteration);
        const state = stateDir();
        const result = await hashproof(proxy.url, state, ['monitor', '--once']);
        assert.equal(result.code, 1, `${name}: ${result.stdout}${result.stderr}`);
        assert.match(
          result.stderr,
          /^log tiles do not match the checkpoint: proofs\.example\.test\/log size \d+, root /m,
          name,
        );
        assert.match(result.stderr, problem, name);
        assert.equal(remembered(state).monitoredSize, 0, `${name}: no entry counts as checked`);
      }
      proxy.alter((_url, body) => body);
      const untouched = await hashproof(proxy.url, stateDir(), ['monitor', '--once']);
      assert.equal(untouched.code, 0, untouched.stderr);
    } finally {
      await proxy.close();
    }
  });

  test('monitor checks at most --max-entries entries a pass, the rest at the next; no consistency proof is exit 3', async () => {
    const state = stateDir();
    const size = (await latest(a)).size;
    assert.ok(size > 6, `a log of ${size} entries`);
    let checked = 0;
    while (checked < size) {
      const pass = await hashproof(a.baseUrl, state, ['monitor', '--once', '--max-entries', '3']);
      assert.equal(pass.code, 0, pass.stderr);
      const count = Math.min(3, size - checked);
      checked += count;
      const left = size - checked;
      assert.match(
        pass.stdout,
        new RegExp(
          `; ${count} new entr(y matches|ies match) the tiles${left > 0 ? `; ${left} left for the next pass \\(--max-entries 3\\)` : ''}\n$`,
        ),
      );
      assert.equal(remembered(state).monitoredSize, checked);
    }

    // A pass that stops short proves its tree a prefix of the checkpoint's: without that proof, exit 3.
    const hostile = await startHostileApi({
      upstream: a.baseUrl,
      misbehave: { '/api/log/consistency': { fault: 'unavailable', retryAfter: '0' } },
    });
    try {
      const fresh = stateDir();
      const unchecked = await hashproof(hostile.url, fresh, ['monitor', '--once', '--max-entries', '2']);
      assert.equal(unchecked.code, 3, unchecked.stdout + unchecked.stderr);
      assert.match(
        unchecked.stderr,
        new RegExp(
          `^could not check the log: ${ORIGIN.replaceAll('.', '\\.')}: no consistency proof from size 2 to ${size}`,
        ),
      );
      assert.equal(remembered(fresh).monitoredSize, 0, 'nothing counts as checked');
    } finally {
      await hostile.close();
    }
    const usage = await hashproof(a.baseUrl, stateDir(), ['monitor', '--once', '--max-entries', '0']);
    assert.equal(usage.code, 2);
  });

  /**
   * Each command, against a log of another size than the one seen (smaller, equal, larger): one run
   * each, from a copy of the state that remembers A at 6 entries. Returns how many were detected. A
   * smaller log cannot prove the tree seen before (it has no such tree): that is no fork but a log that
   * could not be checked (exit 3), remembered as before.
   */
  async function everyShape(other: TestServer): Promise<number> {
    let detected = 0;
    for (const size of [4, 6, 8]) {
      const expect = (result: Run, served?: LogCheckpoint) => {
        if (size > seen.size || size === seen.size) return assertFork(result, seen, served);
        assert.equal(result.code, 3, result.stdout + result.stderr);
        assert.match(
          result.stderr,
          /^could not check the log: proofs\.example\.test\/log: no consistency proof from size 4 to 6 \(.*is larger than the log/m,
        );
      };
      // stamp adds its own proof first: the log it sees has `size` entries.
      await growTo(other, size - 1);
      const stampState = stateDir(seed);
      expect(await hashproof(other.baseUrl, stampState, ['stamp', newFile()]));
      assert.deepEqual(remembered(stampState).checkpoint, seen, 'stamp remembers nothing inconsistent');
      detected += size >= seen.size ? 1 : 0;
      const served = await growTo(other, size);
      for (const args of [
        ['verify', stamped, '--online'],
        ['monitor', '--once'],
      ]) {
        const state = stateDir(seed);
        expect(await hashproof(other.baseUrl, state, args), served);
        assert.deepEqual(remembered(state), { checkpoint: seen, monitoredSize: 6 }, args[0]);
        detected += size >= seen.size ? 1 : 0;
      }
    }
    return detected;
  }

  test('a twin service (same keys and origin, another database) is a fork at every size it can be checked', async () => {
    const twinDir = makeDataDir();
    // The keys, not A's record of its log: with that record the twin would refuse to sign at all.
    cpSync(path.join(a.dataDir, 'keys'), path.join(twinDir, 'keys'), {
      recursive: true,
      filter: (source) => !path.basename(source).startsWith('log-checkpoint-'),
    });
    const twin = await startServer({ dataDir: twinDir, env });
    servers.push(twin);
    assert.equal(twin.ctx.log.verifierKey, a.ctx.log.verifierKey, 'one log key, one origin');
    assert.equal(await everyShape(twin), 6);
  });

  test('A restored from its older backup and let go on (the record moved aside) is a fork at every size it can be checked', async () => {
    await a.close();
    backup.restore();
    const keys = path.join(a.dataDir, 'keys');
    const aside = path.join(a.dataDir, 'aside');
    mkdirSync(aside);
    const records = readdirSync(keys).filter((name) => name.startsWith('log-checkpoint-'));
    assert.equal(records.length, 1, 'the record lives beside the keys by default');
    for (const name of records) renameSync(path.join(keys, name), path.join(aside, name));
    a = await startServer({ dataDir: a.dataDir, env });
    assert.equal((await latest(a)).size, 3, 'the log goes on from the backup');
    assert.equal(await everyShape(a), 6);
  });
});
