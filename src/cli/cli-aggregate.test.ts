import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { api, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { startHeaderServer, type HeaderServer } from '../../test/bitcoin-headers.ts';
import { startCalendar, type Calendar } from '../../test/ots-calendar.ts';
import { reference } from '../../test/ots-reference.ts';
import { run } from '../../test/process.ts';
import { eventually } from '../../test/wait.ts';
import { manifestKeysOf, verifyProofFile } from '../client/client.ts';
import { CLI, cli, server, withCliServer, work } from './cli-test-setup.ts';

const digestOf = (text: string) => createHash('sha256').update(text).digest('hex');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
type Check = { name: string; status: string; message: string };

/** The ids of the proofs the service holds (the test's service holds fewer than a page). */
async function proofIds(baseUrl: string): Promise<Set<string>> {
  const page = await api(baseUrl, '/api/proofs/recent?limit=100');
  assert.equal(page.status, 200);
  assert.ok(page.body.proofs.length < 100, 'the page holds every proof');
  return new Set(page.body.proofs.map((p: { id: string }) => p.id));
}

/** A directory of `count` small files, some in a subdirectory; their paths in the tree's order. */
function makeSet(dir: string, count: number, seed: string): string[] {
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const file = path.join(dir, i % 3 === 0 ? 'sub' : '', `file-${String(i).padStart(3, '0')}.txt`);
    writeFileSync(file, `${seed} ${i}`);
    files.push(file);
  }
  return files.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

describe('hashproof stamp --aggregate', () => {
  withCliServer();

  let dir: string;
  let files: string[];
  let root: string;
  before(async () => {
    dir = path.join(work, 'hundred');
    files = makeSet(dir, 100, 'hundred');
  });

  test('100 files: exactly one new proof, of the root with its metadata; each file its proof file; a re-run creates nothing', async () => {
    const before = await proofIds(server.baseUrl);
    const stamped = await cli([
      'stamp',
      '--aggregate',
      dir,
      '--label',
      'release 1.0',
      '--metadata',
      'team=build',
      '--json',
    ]);
    assert.equal(stamped.code, 0, stamped.stderr);
    const result = JSON.parse(stamped.stdout);
    assert.equal(result.idempotentReplay, false);
    assert.deepEqual(
      result.files.map((f: { file: string }) => f.file),
      files,
      'the leaves are the files sorted bytewise by path',
    );
    const after = await proofIds(server.baseUrl);
    const added = [...after].filter((id) => !before.has(id));
    assert.deepEqual(added, [result.proof.id], 'one proof for the set');
    root = result.root;
    const stored = await api(server.baseUrl, `/api/proofs/${result.proof.id}`);
    assert.equal(stored.body.proof.contentHash, root);
    assert.equal(stored.body.proof.label, 'release 1.0');
    assert.deepEqual([...stored.body.proof.metadataKeys].sort(), ['aggregate', 'count', 'team']);
    assert.equal(
      stored.body.proof.metadataHash,
      'sha256:' +
        createHash('sha256')
          .update(JSON.stringify({ aggregate: 'rfc6962', count: 100, team: 'build' }))
          .digest('hex'),
    );
    // The service never learns the file list: no file's digest is a proof of its own.
    const search = await api(
      server.baseUrl,
      `/api/proofs/search?contentHash=sha256:${digestOf('hundred 0')}`,
    );
    assert.deepEqual(search.body.proofs, []);
    for (const [index, file] of files.entries()) {
      const document = readJson(`${file}.proof.json`);
      assert.equal(document.proof.id, result.proof.id);
      assert.equal(document.aggregation.index, index);
      assert.equal(document.aggregation.size, 100);
    }

    const again = await cli([
      'stamp',
      '--aggregate',
      dir,
      '--label',
      'release 1.0',
      '--metadata',
      'team=build',
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /^already stamped 100 files as one proof \(root sha256:[0-9a-f]{64}\) {2}http/,
    );
    assert.deepEqual(await proofIds(server.baseUrl), after, 'the re-run creates no proof');
  });

  test('each file verifies: its digest leads through its path to the proof, then the proof as any other', async () => {
    const manifest = manifestKeysOf((await api(server.baseUrl, '/.well-known/hashproof-keys.json')).body);
    assert.ok(Array.isArray(manifest));
    // Every file with the verifier `hashproof verify` runs; three through the command itself.
    for (const file of files) {
      const verdict = await verifyProofFile(readJson(`${file}.proof.json`), { path: file }, manifest);
      assert.equal(verdict.verified, true, `${file}: ${verdict.problems.join('; ')}`);
      assert.equal(verdict.checks[0]!.name, 'aggregation');
      assert.equal(verdict.checks[0]!.status, 'valid');
    }
    const online = await cli(['verify', files[12]!, '--online']);
    assert.equal(online.code, 0, online.stdout + online.stderr);
    assert.match(online.stdout, /^ok {3}aggregation: /m);
    assert.equal(readJson(`${files[12]}.proof.json`).aggregation.index, 12, 'kept when the file is saved');
    for (const file of [files[0]!, files[57]!, files[99]!]) {
      const verified = await cli(['verify', file, '--json']);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
      const checks: Check[] = JSON.parse(verified.stdout).checks;
      assert.equal(checks.find((c) => c.name === 'aggregation')?.status, 'valid');
      assert.equal(checks.find((c) => c.name === 'receipt')?.status, 'valid');
    }
  });

  test('a changed file fails, and so does a path from another set or a malformed one', async () => {
    const changed = path.join(work, 'changed.txt');
    writeFileSync(changed, 'hundred 42, edited');
    const verifyWith = async (file: string, document: unknown) => {
      const proofFile = path.join(work, `proof-${Math.random()}.json`);
      writeFileSync(proofFile, JSON.stringify(document));
      const result = await cli(['verify', file, proofFile, '--json']);
      const report = JSON.parse(result.stdout);
      return {
        code: result.code,
        report,
        aggregation: report.checks.find((c: Check) => c.name === 'aggregation'),
      };
    };
    const forty = files[42]!;
    const edited = await verifyWith(changed, readJson(`${forty}.proof.json`));
    assert.equal(edited.code, 1);
    assert.equal(edited.aggregation.status, 'invalid');
    assert.match(edited.report.problems[0], /^aggregation: The content's hash does not lead/);

    // Another set of three files, stamped as one: its paths lead to its own root only.
    const other = makeSet(path.join(work, 'other'), 3, 'other');
    const stamped = await cli(['stamp', '--aggregate', ...other]);
    assert.equal(stamped.code, 0, stamped.stderr);
    const mixed = { ...readJson(`${other[1]}.proof.json`), proof: readJson(`${forty}.proof.json`).proof };
    const foreign = await verifyWith(other[1]!, mixed);
    assert.equal(foreign.code, 1, 'a path of another set with this proof');
    assert.equal(foreign.aggregation.status, 'invalid');
    const borrowed = {
      ...readJson(`${forty}.proof.json`),
      aggregation: readJson(`${other[1]}.proof.json`).aggregation,
    };
    assert.equal((await verifyWith(forty, borrowed)).code, 1, 'this proof with the path of another set');

    const good = readJson(`${forty}.proof.json`);
    const malformed: [string, unknown][] = [
      ['a hash left out', { ...good.aggregation, path: good.aggregation.path.slice(1) }],
      ['an index at the size', { ...good.aggregation, index: 100 }],
      ['not an object', 'leaf 42'],
      ['null', null],
    ];
    for (const [what, aggregation] of malformed) {
      const result = await verifyWith(forty, { ...good, aggregation });
      assert.equal(result.code, 1, what);
      assert.equal(result.aggregation.status, 'invalid', what);
      assert.match(result.aggregation.message, /^The proof file is malformed/, what);
    }
  });

  test('what the command refuses before hashing anything', async () => {
    const file = files[0]!;
    const cases: [string[], RegExp][] = [
      [['stamp', '--ots', file], /--ots works with --aggregate/],
      [['stamp', '--aggregate'], /at least one file or directory/],
      [['stamp', '--aggregate', '-'], /not -/],
      [['stamp', '--aggregate', file, '--out', 'x.json'], /--out does not work/],
      [['stamp', '--aggregate', file, '--metadata', 'count=3'], /count=… is not allowed/],
      [['stamp', '--aggregate', file, file], /named twice/],
      [['stamp', '--aggregate', file, '--label', 'two\nlines'], /one line/],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
    }
  });
});

/** With --ots, each file's .ots, read by the reference library from the file's own digest. */
describe('hashproof stamp --aggregate --ots', () => {
  let calendar: Calendar;
  let headers: HeaderServer;
  let ots: TestServer;
  let scratch: string;
  before(async () => {
    [calendar, headers] = await Promise.all([startCalendar(), startHeaderServer()]);
    ots = await startServer({
      env: {
        BITCOIN_HEADERS_URL: headers.url,
        ANCHOR_OTS_CALENDARS: calendar.url,
        ANCHOR_INTERVAL_MS: '100',
        ANCHOR_ALLOW_PRIVATE_URLS: 'true',
      },
    });
    scratch = makeDataDir();
  });
  after(async () => {
    await ots.close();
    ots.cleanup();
    await Promise.all([calendar.close(), headers.close()]);
  });

  const hashproof = (args: string[]) =>
    run(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH,
        HASHPROOF_URL: ots.baseUrl,
        HASHPROOF_STATE_DIR: path.join(scratch, '.state'),
      },
    });

  test('written once the proof is anchored, by a later run that creates no proof; the reference reads each from its file', async () => {
    const dir = path.join(scratch, 'set');
    const files = makeSet(dir, 7, 'anchored');
    const first = await hashproof(['stamp', '--aggregate', dir, '--ots', '--json']);
    assert.equal(first.code, 0, first.stderr);
    const stamped = JSON.parse(first.stdout);
    const proofId: string = stamped.proof.id;
    if (!stamped.otsAnchored) {
      assert.ok(
        files.every((file) => !existsSync(`${file}.ots`)),
        'no .ots before the anchor',
      );
      await eventually(() => api(ots.baseUrl, `/api/proofs/${proofId}/anchors`), {
        what: 'the anchor of the aggregated proof',
        until: (res) => res.status === 200 && res.body.opentimestamps.length > 0,
      });
    }
    const second = await hashproof(['stamp', '--aggregate', dir, '--ots', '--json']);
    assert.equal(second.code, 0, second.stderr);
    const later = JSON.parse(second.stdout);
    assert.equal(later.proof.id, proofId);
    assert.equal(later.idempotentReplay, true);
    assert.equal(later.otsAnchored, true);
    assert.deepEqual(
      later.files.map((f: { ots: string }) => f.ots),
      files.map((file) => `${file}.ots`),
    );
    const third = await hashproof(['stamp', '--aggregate', dir, '--ots']);
    assert.match(
      third.stdout,
      /^wrote 0 \.ots files \(7 already there\)$/m,
      'the set is the same: the .ots files are not leaves',
    );

    // The proof's own .ots, from its contentHash (the root): the attestations every file must reach.
    const served = await fetch(`${ots.baseUrl}/api/proofs/${proofId}/proof.ots`);
    assert.equal(served.status, 200);
    const proofOts = path.join(scratch, 'proof.ots');
    writeFileSync(proofOts, Buffer.from(await served.arrayBuffer()));
    const request = {
      headers: {},
      files: [
        { path: proofOts, contentHash: stamped.root.slice('sha256:'.length) },
        ...files.map((file) => ({ path: `${file}.ots`, contentHash: digestOf(readFileSync(file, 'utf8')) })),
      ],
    };
    const [own, ...each] = await reference('check', request);
    assert.equal(own.digestMatches, true);
    assert.ok(own.attestations.length > 0);
    assert.ok(own.attestations.every((a: { kind: string }) => a.kind === 'pending'));
    for (const [i, answer] of each.entries()) {
      assert.equal(answer.error, undefined, files[i]);
      assert.equal(answer.digestMatches, true, `${files[i]}: the .ots starts from the file's own digest`);
      assert.deepEqual(
        answer.attestations,
        own.attestations,
        `${files[i]}: it reaches the proof's commitments`,
      );
    }

    // Once Bitcoin attests the calendar, a file's .ots written then is verified by the reference
    // against the block header: from the file's own digest to the block.
    const block = calendar.confirm();
    headers.add(block.height, block.header);
    await eventually(() => api(ots.baseUrl, `/api/proofs/${proofId}/anchors`), {
      what: 'the Bitcoin attestation of the calendar',
      until: (res) => res.body.opentimestamps?.[0]?.status === 'bitcoin',
      timeoutMs: 20_000,
    });
    rmSync(`${files[5]}.ots`);
    const fourth = await hashproof(['stamp', '--aggregate', dir, '--ots']);
    assert.match(fourth.stdout, /^wrote 1 \.ots files \(6 already there\)$/m);
    const [confirmed] = await reference('check', {
      headers: { [block.height]: block.header.toString('hex') },
      files: [{ path: `${files[5]}.ots`, contentHash: digestOf(readFileSync(files[5]!, 'utf8')) }],
    });
    assert.equal(confirmed.digestMatches, true);
    const bitcoin = confirmed.attestations.filter((a: { kind: string }) => a.kind === 'bitcoin');
    assert.deepEqual(
      bitcoin.map((a: { height: number; verified: boolean }) => [a.height, a.verified]),
      [[block.height, true]],
    );

    // A file whose content changed no longer matches its .ots.
    writeFileSync(files[3]!, 'changed');
    const [changed] = await reference('check', {
      headers: {},
      files: [{ path: `${files[3]}.ots`, contentHash: digestOf('changed') }],
    });
    assert.equal(changed.digestMatches, false);
  });
});
