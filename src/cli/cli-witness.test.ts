/**
 * `--witness`, `--witness-quorum` and `--witness-wait` of the real command against a real service. The
 * service's side of witnessing (C2SP tlog-witness) is not exercised here: the cosigned checkpoints it
 * will serve are made as it will make them, by appending cosignature lines that `cosign()` signs with
 * test witness keys to a real checkpoint — in proof files, and on `/log/checkpoint` through a proxy.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cosign, generateCosignerKey, type CosignerKey } from '../core/cosignature.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { cli, server, withCliServer, work } from './cli-test-setup.ts';
import { startCountingProxy, type CountingProxy } from './stamp-many-test-proxy.ts';

withCliServer();

const w1 = generateCosignerKey('witness.example/one');
const w2 = generateCosignerKey('witness.example/two');
const stranger = generateCosignerKey('elsewhere.example/w');
const NOW = Math.floor(Date.now() / 1000);

/** The checkpoint note's text (without its signature lines). */
const textOf = (note: string) => note.slice(0, note.lastIndexOf('\n\n') + 1);
/** A checkpoint note with cosignature lines of `keys` (over `over`, its own text by default) appended. */
const cosigned = (note: string, keys: CosignerKey[], over = textOf(note)) =>
  note + keys.map((key) => `${cosign(over, NOW, key)}\n`).join('');

type Check = { name: string; status: string; message: string };
const checksOf = (stdout: string) => JSON.parse(stdout).checks as Check[];
const statusOf = (stdout: string, name: string) => checksOf(stdout).find((c) => c.name === name)?.status;

/** Stamps a new file (through `url` when given); its path and its proof file's JSON. */
async function stamped(name: string, url?: string, extra: string[] = []) {
  const file = path.join(work, name);
  writeFileSync(file, `${name} ${Math.random()}`);
  const run = await cli(['stamp', file, ...(url === undefined ? [] : ['--url', url]), ...extra]);
  return { file, run, proofFile: () => JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')) };
}

/** A copy of a proof file, at `to`, whose checkpoint note is `note(its own)`; its path. */
function withCheckpoint(
  document: { evidence: { tlogProof: string } },
  to: string,
  note: (n: string) => string,
) {
  const { checkpoint } = parseTlogProof(document.evidence.tlogProof);
  const head = document.evidence.tlogProof.slice(0, -checkpoint.length);
  const copy = { ...document, evidence: { ...document.evidence, tlogProof: head + note(checkpoint) } };
  writeFileSync(to, JSON.stringify(copy, null, 2));
  return to;
}

describe('hashproof verify --witness: the proof file checkpoint, counted offline', () => {
  test('the quorum of valid cosignatures verifies; too few, or one bad line of a given witness, does not', async () => {
    const { file, run, proofFile } = await stamped('witnessed.txt');
    assert.equal(run.code, 0, run.stderr);
    const document = proofFile();
    const at = (name: string) => path.join(work, name);
    const both = withCheckpoint(document, at('both.proof.json'), (n) => cosigned(n, [w1, w2]));
    const keys = ['--witness', w1.vkey, '--witness', w2.vkey];

    const good = await cli(['verify', file, both, ...keys]);
    assert.equal(good.code, 0, good.stdout + good.stderr);
    assert.match(
      good.stdout,
      /^ok {3}witness witness\.example\/one: Cosigned the checkpoint of size \d+ at /m,
    );
    assert.match(
      good.stdout,
      /^ok {3}witnesses: 2 of 2 witnesses cosigned the checkpoint of size \d+; 2 required$/m,
    );
    assert.match(good.stdout, /^verified: /m);

    // The file as stamped carries no cosignature: by default every witness given is required.
    const bare = await cli(['verify', file, ...keys]);
    assert.equal(bare.code, 1);
    assert.match(
      bare.stdout,
      /^not verified: witnesses: 0 of 2 witnesses cosigned the checkpoint of size \d+; 2 required; no cosignature by witness\.example\/one \(key id [0-9a-f]{8}\), witness\.example\/two/m,
    );
    assert.match(bare.stdout, /^MISS witnesses: /m);

    const one = withCheckpoint(document, at('one.proof.json'), (n) => cosigned(n, [w1, stranger]));
    const short = await cli(['verify', file, one, ...keys, '--json']);
    assert.equal(short.code, 1);
    assert.equal(statusOf(short.stdout, 'witness witness.example/one'), 'valid');
    assert.equal(statusOf(short.stdout, 'witness witness.example/two'), 'unavailable');
    assert.equal(statusOf(short.stdout, 'witnesses'), 'unavailable');
    assert.equal(JSON.parse(short.stdout).ok, false);
    // A quorum of 1: the one valid cosignature is enough; the stranger's line is ignored.
    const quorum1 = await cli(['verify', file, one, ...keys, '--witness-quorum', '1', '--json']);
    assert.equal(quorum1.code, 0, quorum1.stdout);
    assert.equal(statusOf(quorum1.stdout, 'witness witness.example/two'), 'unchecked');
    assert.equal(statusOf(quorum1.stdout, 'witnesses'), 'valid');

    // w2's cosignature over another checkpoint text (another size): w2's line is bad, the file rejected
    // even though w1's alone would meet a quorum of 1.
    const other = (n: string) => textOf(n).replace(/\n(\d+)\n/, (_m, size) => `\n${Number(size) + 1}\n`);
    const bad = withCheckpoint(document, at('bad.proof.json'), (n) =>
      cosigned(cosigned(n, [w1]), [w2], other(n)),
    );
    const rejected = await cli(['verify', file, bad, ...keys, '--witness-quorum', '1']);
    assert.equal(rejected.code, 1);
    assert.match(rejected.stdout, /^FAIL witness witness\.example\/two: Its cosignature does not verify/m);
    assert.match(
      rejected.stdout,
      /^not verified: witnesses: Rejected: a cosignature on the checkpoint of size \d+ does not verify: witness\.example\/two/m,
    );
    assert.doesNotMatch(rejected.stdout, /^verified/m);
    // The same line of a witness not given is ignored.
    const ignored = await cli(['verify', file, bad, '--witness', w1.vkey]);
    assert.equal(ignored.code, 0, ignored.stdout);
    // Without --witness, cosignatures are not counted: the file verifies as before.
    assert.equal((await cli(['verify', file, bad])).code, 0);
  });

  test('a malformed key, a quorum out of range or without --witness: usage errors (exit 2)', async () => {
    const { file } = await stamped('usage.txt');
    const cases: [string[], RegExp][] = [
      [['--witness', 'nonsense'], /--witness takes a witness's verifier key .*"nonsense" is not one/],
      [['--witness', w1.vkey.replace(/\+[0-9a-f]{8}\+/, '+00000000+')], /verifier key id does not match/],
      [
        ['--witness', w1.vkey, '--witness-quorum', '2'],
        /--witness-quorum takes a whole number from 1 to the number of witnesses given \(1\)/,
      ],
      [['--witness', w1.vkey, '--witness-quorum', '0'], /--witness-quorum takes a whole number/],
      [
        ['--witness', w1.vkey, '--witness', w1.vkey, '--witness-quorum', '2'],
        /a key given twice counting once/,
      ],
      [['--witness-quorum', '1'], /--witness-quorum needs --witness/],
      [['--witness', w1.vkey, '--witness-wait', 'soon'], /--witness-wait takes whole seconds/],
    ];
    for (const [options, message] of cases) {
      const run = await cli(['verify', file, ...options]);
      assert.equal(run.code, 2, `${options.join(' ')}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, message);
    }
    const stamp = await cli(['stamp', path.join(work, 'usage.txt'), '--witness', 'nonsense']);
    assert.equal(stamp.code, 2);
    const monitor = await cli(['monitor', '--once', '--witness', w1.vkey, '--witness-quorum', '5']);
    assert.equal(monitor.code, 2);
  });
});

describe('a service whose checkpoints carry no cosignature yet', () => {
  test('verify --online, stamp and monitor with --witness refuse, saying what is missing: never "verified"', async () => {
    const { file, proofFile } = await stamped('uncosigned.txt');
    const before = JSON.stringify(proofFile());
    const online = await cli(['verify', file, '--online', '--witness', w1.vkey, '--witness-wait', '0']);
    assert.equal(online.code, 1, online.stdout + online.stderr);
    assert.match(online.stdout, /^MISS witnesses online: the witnesses' quorum was not reached within 0 s/m);
    assert.match(online.stdout, /^not verified: witnesses: 0 of 1 witnesses cosigned/m);
    assert.equal(JSON.stringify(proofFile()), before, 'the proof file is left as it was');

    const made = await stamped('stamped-unwitnessed.txt', undefined, [
      '--witness',
      w1.vkey,
      '--witness-wait',
      '1',
    ]);
    assert.equal(made.run.code, 3, made.run.stdout + made.run.stderr);
    assert.match(
      made.run.stderr,
      /^hashproof: the witnesses' quorum was not reached within 1 s: 0 of 1 witnesses cosigned the checkpoint of size \d+; 1 required; no cosignature by witness\.example\/one .*The proof is made and written with the checkpoint the log gave; hashproof verify --online with the same --witness options/m,
    );
    assert.match(made.run.stdout, /^stamped /m);
    assert.ok(made.proofFile().evidence.tlogProof, 'the proof file is written');

    const monitor = await cli(['monitor', '--once', '--witness', w1.vkey]);
    assert.equal(monitor.code, 3, monitor.stdout + monitor.stderr);
    assert.match(
      monitor.stderr,
      /checkpoint not counted: 0 of 1 witnesses cosigned the checkpoint of size \d+/,
    );
    assert.doesNotMatch(monitor.stdout, /^ok/m);
  });
});

describe('a service that serves checkpoints cosigned by the witnesses (a proxy cosigns /log/checkpoint)', () => {
  let proxy: CountingProxy;
  /** Who cosigns the checkpoint the proxy serves; `forged` cosign another text than its own. */
  let cosigners: { keys: CosignerKey[]; forged?: CosignerKey[] } = { keys: [w1, w2] };
  /** The proxy's cosigning of `/log/checkpoint`, as `cosigners` says. */
  const cosigning = (at: string, body: Buffer) => {
    if (at !== '/log/checkpoint') return body;
    const note = cosigned(body.toString('utf8'), cosigners.keys);
    const other = textOf(note).replace(/\n(\d+)\n/, '\n1$1\n');
    return Buffer.from(cosigned(note, cosigners.forged ?? [], other));
  };
  before(async () => {
    proxy = await startCountingProxy(server.baseUrl);
    proxy.alter(cosigning);
  });
  after(() => proxy.close());
  const keys = ['--witness', w1.vkey, '--witness', w2.vkey];

  test('stamp --witness brings the new proof up to the cosigned checkpoint; verify counts it offline', async () => {
    const made = await stamped('cosigned.txt', proxy.url, keys);
    assert.equal(made.run.code, 0, made.run.stdout + made.run.stderr);
    const note = parseTlogProof(made.proofFile().evidence.tlogProof).checkpoint;
    assert.match(note, /\n— witness\.example\/one \S+\n— witness\.example\/two \S+\n$/);
    const offline = await cli(['verify', made.file, ...keys]);
    assert.equal(offline.code, 0, offline.stdout + offline.stderr);
    assert.match(offline.stdout, /^ok {3}witnesses: 2 of 2 witnesses cosigned/m);
    assert.match(offline.stdout, /^ok {3}inclusion: /m);
  });

  test('stamp --witness waits for the witnesses, saying so, while the log serves a checkpoint without them', async () => {
    let looks = 0;
    // The first look at the log's checkpoint finds no cosignature; the witnesses answer by the second.
    proxy.alter((at, body) => (at === '/log/checkpoint' && ++looks === 1 ? body : cosigning(at, body)));
    try {
      const made = await stamped('waited.txt', proxy.url, [...keys, '--witness-wait', '120']);
      assert.equal(made.run.code, 0, made.run.stdout + made.run.stderr);
      assert.match(
        made.run.stderr,
        /^hashproof: waiting for the witnesses \(at most 120 s, 0 s so far\): 0 of 2 witnesses cosigned the checkpoint of size \d+; 2 required; no cosignature by witness\.example\/one/m,
      );
      assert.ok(looks >= 2);
      assert.match(
        parseTlogProof(made.proofFile().evidence.tlogProof).checkpoint,
        /— witness\.example\/one /,
      );
    } finally {
      proxy.alter(cosigning);
    }
  });

  test('stamp --witness of many files, and of an aggregate: every proof file carries the cosigned checkpoint', async () => {
    const dir = path.join(work, 'many');
    mkdirSync(dir);
    for (const name of ['a.txt', 'b.txt', 'c.txt'])
      writeFileSync(path.join(dir, name), `${name} ${Math.random()}`);
    const many = await cli(['stamp', dir, '--url', proxy.url, ...keys]);
    assert.equal(many.code, 0, many.stdout + many.stderr);
    const aggregate = path.join(work, 'set');
    mkdirSync(aggregate);
    for (const name of ['x.txt', 'y.txt'])
      writeFileSync(path.join(aggregate, name), `${name} ${Math.random()}`);
    const set = await cli(['stamp', '--aggregate', aggregate, '--url', proxy.url, ...keys]);
    assert.equal(set.code, 0, set.stdout + set.stderr);
    for (const file of ['many/a.txt', 'many/b.txt', 'many/c.txt', 'set/x.txt', 'set/y.txt']) {
      const document = JSON.parse(readFileSync(path.join(work, `${file}.proof.json`), 'utf8'));
      assert.match(parseTlogProof(document.evidence.tlogProof).checkpoint, /— witness\.example\/two /, file);
      const verify = await cli(['verify', path.join(work, file), ...keys]);
      assert.equal(verify.code, 0, `${file}: ${verify.stdout}`);
    }
  });

  test('verify --online brings an older proof file up to the latest cosigned checkpoint and saves it', async () => {
    const older = await stamped('older.txt');
    const before = parseTlogProof(older.proofFile().evidence.tlogProof);
    // The log grows past it.
    await stamped('later.txt');
    const online = await cli(['verify', older.file, '--online', '--url', proxy.url, ...keys]);
    assert.equal(online.code, 0, online.stdout + online.stderr);
    const after = parseTlogProof(older.proofFile().evidence.tlogProof);
    assert.equal(after.leafIndex, before.leafIndex);
    const size = (note: string) => Number(note.split('\n')[1]);
    assert.ok(size(after.checkpoint) > size(before.checkpoint), 'brought up to a larger tree');
    assert.match(after.checkpoint, /— witness\.example\/two /);
    // Saved: it now verifies offline with the witnesses, and the inclusion at the new size holds.
    const offline = await cli(['verify', older.file, ...keys, '--json']);
    assert.equal(offline.code, 0, offline.stdout);
    assert.equal(statusOf(offline.stdout, 'inclusion'), 'valid');

    // A file written before the proof joined the log (no tlog-proof, no place): the service's record
    // names the place, and the file gets a cosigned tlog-proof.
    const early = { ...older.proofFile(), proof: { ...older.proofFile().proof, log: null } };
    delete early.evidence.tlogProof;
    const earlyFile = path.join(work, 'early.proof.json');
    writeFileSync(earlyFile, JSON.stringify(early, null, 2));
    const placed = await cli(['verify', older.file, earlyFile, '--online', '--url', proxy.url, ...keys]);
    assert.equal(placed.code, 0, placed.stdout + placed.stderr);
    const saved = JSON.parse(readFileSync(earlyFile, 'utf8'));
    assert.equal(parseTlogProof(saved.evidence.tlogProof).leafIndex, after.leafIndex);
    assert.match(saved.evidence.tlogProof, /— witness\.example\/one /);
  });

  test('verify --online: a cosigned checkpoint that does not extend the proof file checkpoint is a fork; nothing is saved', async () => {
    const older = await stamped('forked.txt');
    await stamped('forked-later.txt');
    const before = readFileSync(`${older.file}.proof.json`, 'utf8');
    // The service's consistency proofs no longer prove anything (the same number of other hashes).
    proxy.alter((at, body) => {
      if (at !== '/api/log/consistency') return cosigning(at, body);
      const answer = JSON.parse(body.toString('utf8')) as { hashes: string[] };
      answer.hashes = answer.hashes.map(() => Buffer.alloc(32, 7).toString('base64'));
      return Buffer.from(JSON.stringify(answer));
    });
    try {
      const online = await cli(['verify', older.file, '--online', '--url', proxy.url, ...keys]);
      assert.equal(online.code, 1, online.stdout + online.stderr);
      assert.match(
        online.stderr,
        /^log fork detected: .*: the service's cosigned checkpoint \(size \d+, root .*\) is inconsistent with the one in the proof file \(size \d+, /m,
      );
      assert.equal(readFileSync(`${older.file}.proof.json`, 'utf8'), before);
    } finally {
      proxy.alter(cosigning);
    }
  });

  test('monitor counts cosigned checkpoints; one bad line of a given witness rejects the checkpoint (exit 1)', async () => {
    const counted = await cli(['monitor', '--once', '--url', proxy.url, ...keys]);
    assert.equal(counted.code, 0, counted.stdout + counted.stderr);
    assert.match(
      counted.stdout,
      /^ok {3}.*; 2 of 2 witnesses cosigned the checkpoint of size \d+; 2 required$/m,
    );

    const { file } = await stamped('rejected.txt');
    // w2 now signs another text than the checkpoint's: its line is bad.
    cosigners = { keys: [w1], forged: [w2] };
    try {
      const monitor = await cli(['monitor', '--once', '--url', proxy.url, ...keys, '--witness-quorum', '1']);
      assert.equal(monitor.code, 1, monitor.stdout + monitor.stderr);
      assert.match(
        monitor.stderr,
        /^log checkpoint rejected: Rejected: a cosignature on the checkpoint of size \d+ does not verify: witness\.example\/two/m,
      );
      const online = await cli([
        'verify',
        file,
        '--online',
        '--url',
        proxy.url,
        ...keys,
        '--witness-quorum',
        '1',
      ]);
      assert.equal(online.code, 1, online.stdout + online.stderr);
      assert.match(online.stderr, /^log checkpoint rejected: /m);
      const stamp = await stamped('stamp-rejected.txt', proxy.url, keys);
      assert.equal(stamp.run.code, 1, stamp.run.stdout + stamp.run.stderr);
      assert.match(stamp.run.stderr, /^log checkpoint rejected: /m);
      // The proof is made: its file is written, with the checkpoint the log gave (not the rejected one).
      assert.doesNotMatch(stamp.proofFile().evidence.tlogProof, /witness\.example/);
    } finally {
      cosigners = { keys: [w1, w2] };
    }
  });
});
