/**
 * The command against a hostile service (docs/security.md, "A hostile service, seen from the command
 * line"): a real service behind test/hostile-api.ts, which answers genuinely except where told to
 * stall, drip, flood, rate-limit, fail, lie or inject control characters.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startHostileApi, type HostileApi } from '../../test/hostile-api.ts';
import { api, notarizeBody } from '../../test/helper.ts';
import type { Run } from '../../test/process.ts';
import { cli, server, withCliServer, work } from './cli-test-setup.ts';

withCliServer();

let hostile: HostileApi;
/** The hostile service, in front of the test service once that has started. */
function withHostileApi(): void {
  before(async () => {
    hostile = await startHostileApi({ upstream: server.baseUrl });
  });
  after(() => hostile.close());
}

let files = 0;
function newFile(): string {
  const file = path.join(work, `hostile-${++files}.txt`);
  writeFileSync(file, `hostile ${files} ${Math.random()}`);
  return file;
}

let states = 0;
function stateDir(): string {
  const dir = path.join(work, `hostile-state-${++states}`);
  mkdirSync(dir);
  return dir;
}

/** The command against the hostile service, remembering logs in `state` when given. */
function hostileCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return cli(args, { env: { HASHPROOF_URL: hostile.url, ...env } });
}

/** The remembered files of a state directory (its log and its keys), with their contents. */
function remembered(state: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(state).map((name) => [name, readFileSync(path.join(state, name), 'utf8')]),
  );
}

/** A proof made at the service (genuinely), for the commands that read one. */
async function proofId(): Promise<string> {
  const made = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
  assert.equal(made.status, 200, made.text);
  return made.body.proof.id as string;
}

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('no consistency proof is not a fork', () => {
  withHostileApi();
  test('a 429, a 4xx, a 5xx or a malformed answer on /api/log/consistency: exit 3, "could not check the log", nothing remembered', async () => {
    const state = stateDir();
    const first = await hostileCli(['stamp', newFile()], { HASHPROOF_STATE_DIR: state });
    assert.equal(first.code, 0, first.stderr);
    const before = remembered(state);
    assert.equal(Object.keys(before).filter((name) => name.startsWith('log-')).length, 1);
    const refusals = [
      { fault: 'rate-limited', retryAfter: '0' },
      { fault: 'unavailable', retryAfter: '0' },
      { fault: 'malformed' },
      {
        fault: 'lie',
        answer: {
          status: 400,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ error: { code: 'invalid_request', message: 'no', details: {} } }),
        },
      },
    ] as const;
    for (const how of refusals) {
      hostile.misbehave('/api/log/consistency', how);
      const asked = hostile.statuses('/api/log/consistency').length;
      const result = await hostileCli(['stamp', newFile()], { HASHPROOF_STATE_DIR: state });
      assert.equal(result.code, 3, `${how.fault}: ${result.stdout}${result.stderr}`);
      assert.match(
        result.stderr,
        /^could not check the log: 127\.0\.0\.1:\d+\/log: no consistency proof from size \d+ to \d+ \(/m,
      );
      assert.doesNotMatch(result.stderr, /fork/);
      assert.deepEqual(remembered(state), before, `${how.fault}: the remembered checkpoint stays`);
      const tries = hostile.statuses('/api/log/consistency').slice(asked);
      if (how.fault === 'rate-limited')
        assert.deepEqual(tries, [429, 429, 429], 'three tries after Retry-After');
    }
    hostile.misbehave('/api/log/consistency', undefined);
    const again = await hostileCli(['stamp', newFile()], { HASHPROOF_STATE_DIR: state });
    assert.equal(again.code, 0, again.stderr);
  });
});

describe('timeouts and caps', () => {
  withHostileApi();
  // Without a timeout of its own, the command would wait for the service for ever: the test's own ends it.
  test(
    'a service that never answers, or drips its answer, ends the command with exit 3 within the timeout × tries',
    { timeout: 180_000 },
    async () => {
      const id = await proofId();
      for (const fault of ['silent', 'drip'] as const) {
        hostile.misbehave('/api/proofs/*', { fault, dripMs: 50 });
        const started = performance.now();
        const result = await hostileCli(['show', id, '--timeout', '1']);
        const elapsedMs = performance.now() - started;
        assert.equal(result.code, 3, `${fault}: ${result.stdout}${result.stderr}`);
        assert.match(result.stderr, /did not answer GET \/api\/proofs\/proof_\w+ within 1000 ms/);
        // Three tries of 1 s (and the pauses between them): well under the 30 s of one default try.
        assert.ok(elapsedMs < 25_000, `${fault}: ended after ${Math.round(elapsedMs)} ms`);
      }
      hostile.misbehave('/api/proofs/*', undefined);
      const usage = await hostileCli(['show', id, '--timeout', 'soon']);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /--timeout takes a number of seconds/);
    },
  );

  test('a huge answer is cut at its cap, in bounded memory: exit 3, "answer over N bytes"', async () => {
    const id = await proofId();
    hostile.misbehave('/api/proofs/*', { fault: 'huge', hugeBytes: 512 * 2 ** 20 });
    const shown = await hostileCli(['show', id], { HASHPROOF_REPORT_MAX_RSS: '1' });
    assert.equal(shown.code, 3, shown.stderr);
    assert.match(shown.stderr, /answer over 16777216 bytes/);
    const maxRssKb = Number(/maxRSS (\d+)/.exec(shown.stderr)?.[1]);
    // The command itself takes about 100 MiB, the 16 MiB read before the cut some more; reading the whole
    // answer would take over 512 MiB.
    assert.ok(maxRssKb > 0 && maxRssKb < 256 * 1024, `max RSS ${maxRssKb} kB against a 512 MiB answer`);
    assert.deepEqual(hostile.statuses('/api/proofs/*').slice(-1), [0], 'the answer was broken off');
    hostile.misbehave('/api/proofs/*', undefined);

    // A checkpoint is a small note: its cap is far below the default.
    hostile.misbehave('/log/checkpoint', { fault: 'huge', hugeBytes: 2 ** 20 });
    const monitored = await hostileCli(['monitor', '--once'], { HASHPROOF_STATE_DIR: stateDir() });
    hostile.misbehave('/log/checkpoint', undefined);
    assert.equal(monitored.code, 3, monitored.stderr);
    assert.match(monitored.stderr, /GET \/log\/checkpoint: answer over 65536 bytes/);
  });
});

describe('text from the service', () => {
  withHostileApi();
  test('control characters and newlines in a proof, a page of proofs and an error are printed escaped; --json too', async () => {
    const id = await proofId();
    hostile.misbehave('/api/proofs/*', 'control');
    const shown = await hostileCli(['show', id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.doesNotMatch(shown.stdout, RAW_CONTROL);
    assert.equal(shown.stdout.split('\n').length, 8, 'seven lines, none forged');
    assert.ok(shown.stdout.includes('\\x1b[2J\\x1b[H\\nverified OK\\r\\u009b31m'), shown.stdout);

    const json = await hostileCli(['show', id, '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.doesNotMatch(json.stdout, RAW_CONTROL);
    assert.ok(
      JSON.parse(json.stdout).label.endsWith('\x1b[2J\x1b[H\nverified OK\r\u009b31m'),
      'the same JSON',
    );

    const searched = await hostileCli(['search', '--q', 'release']);
    assert.equal(searched.code, 0, searched.stderr);
    assert.doesNotMatch(searched.stdout, RAW_CONTROL);
    assert.ok(searched.stdout.split('\n').every((line) => line === '' || line.startsWith('proof_')));

    hostile.misbehave('/api/proofs/*', {
      fault: 'lie',
      answer: {
        status: 404,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          error: { code: 'not_found\x1b[2J', message: 'gone\nverified OK\u009b', details: {} },
        }),
      },
    });
    const refused = await hostileCli(['show', id]);
    hostile.misbehave('/api/proofs/*', undefined);
    assert.equal(refused.code, 1);
    assert.equal(refused.stderr, 'hashproof: gone\\nverified OK\\u009b (404 not_found\\x1b[2J)\n');
  });
});

describe('exit codes', () => {
  withHostileApi();
  test('a 4xx in the error envelope is 1 with its code; 503 or 429 after the retries, a malformed answer or a redirect are 3', async () => {
    const unknown = await hostileCli(['show', 'proof_01M81ENN8CHM3NYND1T40S2ZRP']);
    assert.equal(unknown.code, 1, unknown.stderr);
    assert.match(unknown.stderr, /\(404 not_found\)\n$/);
    const id = await proofId();
    const cases = [
      ['unavailable', { fault: 'unavailable', retryAfter: '0' }, /\(503 service_unavailable\)/],
      ['rate-limited', { fault: 'rate-limited', retryAfter: '0' }, /\(429 rate_limited\)/],
      ['malformed', { fault: 'malformed' }, /the answer is not JSON/],
      ['redirect', { fault: 'redirect' }, /answered 302, a redirect to http:\/\/127\.0\.0\.1:9\/elsewhere/],
      [
        'a Retry-After of an hour',
        { fault: 'rate-limited', retryAfter: '3600' },
        /asks to wait 3600 s, over the 60 s this client waits/,
      ],
    ] as const;
    for (const [name, how, said] of cases) {
      hostile.misbehave('/api/proofs/*', how);
      const result = await hostileCli(['show', id]);
      assert.equal(result.code, 3, `${name}: ${result.stderr}`);
      assert.match(result.stderr, said, name);
    }
    hostile.misbehave('/api/proofs/*', undefined);
    hostile.misbehave('/api/proofs/*/tlog-proof', {
      fault: 'lie',
      answer: { headers: { 'content-type': 'text/plain' }, body: 'no proof here\n' },
    });
    const stamped = await hostileCli(['stamp', newFile()], { HASHPROOF_STATE_DIR: stateDir() });
    hostile.misbehave('/api/proofs/*/tlog-proof', undefined);
    assert.equal(stamped.code, 3, stamped.stderr);
    assert.match(stamped.stderr, /the tlog-proof answered: not a c2sp\.org\/tlog-proof@v1 file/);
    const unreachable = await cli(['show', id], { env: { HASHPROOF_URL: 'http://127.0.0.1:9' } });
    assert.equal(unreachable.code, 3);
    assert.match(unreachable.stderr, /^hashproof: cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  test('a missing file named on the command line is a usage error (2)', async () => {
    const missing = path.join(work, 'no-such-file.bin');
    for (const args of [
      ['search', '--file', missing],
      ['monitor', '--once', '--keys', missing],
      ['stamp', missing],
    ]) {
      const result = await cli(args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.ok(result.stderr.includes(missing), result.stderr);
    }
  });
});
