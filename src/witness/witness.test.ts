import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseCosignerKey, verifiedCosigners, verifyCosignature } from '../core/cosignature.ts';
import { scratchDirs } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { rawRequest } from '../../test/raw-http.ts';
import {
  addCheckpoint,
  startWitness,
  submission,
  TestLog,
  type RunningWitness,
} from './witness-test-setup.ts';

/**
 * `hashproof witness` as a process on loopback, fed checkpoints of a log made here: its key, every
 * answer of C2SP tlog-witness add-checkpoint, its record across a restart, and requests that race.
 */

const dirs = scratchDirs();
const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');
const log = new TestLog('log.example/witnessed');
const stranger = new TestLog('log.example/not-witnessed');
const impostor = new TestLog('log.example/witnessed'); // the same origin, another key
const EMPTY_ROOT = createHash('sha256').digest();

const cosignatureOf = (answer: { text: string }): string => {
  assert.match(answer.text, /^— \S+ \S+\n$/);
  return answer.text.slice(0, -1);
};

describe('hashproof witness', () => {
  const keysDir = path.join(dirs(), 'keys');
  const stateDir = path.join(dirs(), 'state');
  const args = ['--keys-dir', keysDir, '--state-dir', stateDir, '--log', log.vkey];
  let witness: RunningWitness;

  before(async () => {
    witness = await startWitness(args);
  });
  after(async () => {
    await witness.stop();
  });

  test('the first start makes the key (0600) and writes and prints its verifier key', () => {
    assert.match(witness.output, /made a new witness key/);
    const keyFile = path.join(keysDir, 'witness-key.json');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.equal(readFileSync(path.join(keysDir, 'witness.vkey'), 'utf8'), `${witness.vkey}\n`);
    const cosigner = parseCosignerKey(witness.vkey);
    assert.match(cosigner.name, /^hashproof-witness\/[0-9a-f]{16}$/);
    assert.doesNotMatch(witness.output, /PRIVATE KEY/);
  });

  test('refusals before anything was cosigned: 404, 403, 400, 413, 422', async () => {
    const refused = async (body: string | Buffer, status: number, reason: RegExp) => {
      const answer = await addCheckpoint(witness.baseUrl, body);
      assert.equal(answer.status, status, answer.text);
      assert.match(answer.text, reason);
      assert.doesNotMatch(answer.text, /^—/m); // never a cosignature
    };
    await refused(stranger.request(0, 3), 404, /unknown log origin/);
    await refused(impostor.request(0, 3), 403, /no signature of the log's key/);
    // The log's key and id, over another text: a signature that fails.
    const forged = log.checkpoint(3).replace('\n3\n', '\n4\n');
    await refused(submission(0, [], forged), 403, /does not verify/);
    await refused(submission(4, [], log.checkpoint(3)), 400, /old size is larger/);
    await refused('garbage', 400, /malformed request/);
    await refused(`old 01\n\n${log.checkpoint(3)}`, 400, /old <size>/);
    await refused(log.request(0, 3).replace('\n\n', '\n'), 400, /malformed/);
    await refused(`old 0\n\n${log.text(3)}`, 400, /malformed/); // no signatures
    await refused(Buffer.from([0x6f, 0x6c, 0x64, 0x20, 0x30, 0x0a, 0x0a, 0xff, 0x0a]), 400, /malformed/);
    const tooMany = submission(3, Array(64).fill(Buffer.alloc(32)), log.checkpoint(8));
    await refused(tooMany, 400, /more than 63/);
    await refused(submission(0, [Buffer.alloc(31)], log.checkpoint(3)), 400, /base64 SHA-256/);
    await refused(`old 0\n\n${'x'.repeat(300 * 1024)}`, 413, /larger than/);
    await refused(submission(0, log.proof(1, 3), log.checkpoint(3)), 422, /from size 0 must be empty/);
    await refused(submission(0, [], log.checkpoint(0, Buffer.alloc(32))), 422, /empty tree/);
    // Nothing was stored: old 0 is still right.
    const conflictFree = await addCheckpoint(witness.baseUrl, log.request(5, 5));
    assert.equal(conflictFree.status, 409);
    assert.equal(conflictFree.text, '0\n');
    assert.equal((await fetch(`${witness.baseUrl}/add-checkpoint`)).status, 405);
    assert.equal((await fetch(`${witness.baseUrl}/nothing`)).status, 404);
  });

  test('garbage on the wire: chunked bodies over the limit, bytes that are not HTTP; it keeps answering', async () => {
    const chunk = `${'0'.repeat(64 * 1024)}`;
    const chunked = [
      'POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      ...Array.from({ length: 5 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
      '0\r\n\r\n',
    ];
    const tooLarge = await rawRequest(witness.baseUrl, chunked);
    assert.equal(tooLarge.status, 413);
    const notHttp = await rawRequest(witness.baseUrl, ['\x00\x01 hello\r\n\r\n']);
    assert.equal(notHttp.status, 400);
    const small = `old 0\n\n${'x'.repeat(100)}`;
    const smallChunked = await rawRequest(witness.baseUrl, [
      'POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
      `${small.length.toString(16)}\r\n${small}\r\n0\r\n\r\n`,
    ]);
    assert.equal(smallChunked.status, 400);
    assert.match(smallChunked.text, /malformed request/);
    const still = await addCheckpoint(witness.baseUrl, stranger.request(0, 1));
    assert.equal(still.status, 404);
  });

  test('200 with a cosignature that verifies with the printed key; then 409, 422 and growth', async () => {
    const cosigner = parseCosignerKey(witness.vkey);
    const first = await addCheckpoint(witness.baseUrl, log.request(0, 5));
    assert.equal(first.status, 200, first.text);
    assert.match(first.contentType ?? '', /^text\/plain/);
    const time = verifyCosignature(log.text(5), cosignatureOf(first), cosigner);
    assert.ok(Math.abs(time - Date.now() / 1000) < 600);
    // The answer appended to the checkpoint is a note cosigned by the witness (tlog-witness).
    assert.equal(verifiedCosigners(log.checkpoint(5) + first.text, [cosigner]).length, 1);

    for (const old of [0, 3, 6]) {
      const stale = await addCheckpoint(witness.baseUrl, log.request(old, 6));
      assert.equal(stale.status, 409);
      assert.equal(stale.contentType, 'text/x.tlog.size');
      assert.equal(stale.text, '5\n');
    }
    const badProof = log
      .proof(5, 9)
      .map((hash, i) => (i === 0 ? createHash('sha256').update(hash).digest() : hash));
    assert.equal(
      (await addCheckpoint(witness.baseUrl, submission(5, badProof, log.checkpoint(9)))).status,
      422,
    );
    // A proof toward another tree of size 9 (a fork) does not verify against the root cosigned at 5.
    const fork = new TestLog(log.origin, 64, 'fork ');
    const forked = submission(5, fork.proof(5, 9), log.checkpoint(9, fork.root(9)));
    assert.equal((await addCheckpoint(witness.baseUrl, forked)).status, 422);
    const sameSizeOtherRoot = submission(5, [], log.checkpoint(5, EMPTY_ROOT));
    assert.equal((await addCheckpoint(witness.baseUrl, sameSizeOtherRoot)).status, 422);

    const same = await addCheckpoint(witness.baseUrl, log.request(5, 5));
    assert.equal(same.status, 200, same.text);
    const grown = await addCheckpoint(witness.baseUrl, log.request(5, 9));
    assert.equal(grown.status, 200, grown.text);
    verifyCosignature(log.text(9), cosignatureOf(grown), cosigner);

    // Monitors read the latest cosigned checkpoint, with the log's signature and the cosignature.
    const originHash = createHash('sha256').update(log.origin).digest('hex');
    const monitored = await fetch(`${witness.baseUrl}/${originHash}/checkpoint`);
    assert.equal(monitored.status, 200);
    const note = await monitored.text();
    assert.ok(note.startsWith(log.checkpoint(9)));
    assert.equal(verifiedCosigners(note, [cosigner]).length, 1);
    const unknown = createHash('sha256').update(stranger.origin).digest('hex');
    assert.equal((await fetch(`${witness.baseUrl}/${unknown}/checkpoint`)).status, 404);
  });

  test('requests that race for one log: one is cosigned, the others learn its size', async () => {
    const sizes = [10, 11, 12, 13, 14, 15, 16, 17];
    const answers = await Promise.all(
      sizes.map((size) => addCheckpoint(witness.baseUrl, log.request(9, size))),
    );
    const won = answers.flatMap((answer, i) => (answer.status === 200 ? [sizes[i]!] : []));
    assert.equal(won.length, 1, answers.map((a) => `${a.status} ${a.text}`).join(''));
    for (const answer of answers.filter((a) => a.status !== 200)) {
      assert.equal(answer.status, 409);
      assert.equal(answer.text, `${won[0]}\n`);
    }
    const grown = await addCheckpoint(witness.baseUrl, log.request(won[0]!, 20));
    assert.equal(grown.status, 200, grown.text);
  });

  test('the record survives a restart, and is never rolled back', async () => {
    // On disk once answered: the size and root of the latest cosignature.
    const originHash = createHash('sha256').update(log.origin).digest('hex');
    const record = JSON.parse(readFileSync(path.join(stateDir, `checkpoint-${originHash}.json`), 'utf8'));
    assert.equal(record.size, 20);
    assert.equal(record.rootHash, log.root(20).toString('base64'));
    assert.equal((await witness.stop()).code, 0);
    witness = await startWitness(args);
    assert.match(witness.output, /witness key:/);
    assert.doesNotMatch(witness.output, /made a new witness key/);
    assert.match(witness.output, /cosigned up to size 20/);
    for (const old of [0, 9, 19]) {
      const stale = await addCheckpoint(witness.baseUrl, log.request(old, 21));
      assert.equal(stale.status, 409);
      assert.equal(stale.text, '20\n');
    }
    // An older checkpoint (smaller than the record) cannot be had: its old is not the record's size,
    // and with the record's size it is "old > size".
    assert.equal((await addCheckpoint(witness.baseUrl, log.request(5, 9))).status, 409);
    assert.equal((await addCheckpoint(witness.baseUrl, submission(20, [], log.checkpoint(9)))).status, 400);
    const next = await addCheckpoint(witness.baseUrl, log.request(20, 21));
    assert.equal(next.status, 200, next.text);
    verifyCosignature(log.text(21), cosignatureOf(next), parseCosignerKey(witness.vkey));

    // Killed outright right after answering: what it answered was on disk already.
    witness.child.kill('SIGKILL');
    await witness.stop();
    witness = await startWitness(args);
    const afterKill = await addCheckpoint(witness.baseUrl, log.request(20, 22));
    assert.equal(afterKill.status, 409);
    assert.equal(afterKill.text, '21\n');
  });
});

describe('hashproof witness refuses to start', () => {
  const witnessRun = (...args: string[]) =>
    run(process.execPath, [CLI, 'witness', ...args], { env: { PATH: process.env.PATH } });

  test('with a key file open to others, or without its options', async () => {
    const keysDir = path.join(dirs(), 'keys');
    const stateDir = path.join(dirs(), 'state');
    const args = ['--keys-dir', keysDir, '--state-dir', stateDir, '--log', log.vkey];
    const started = await startWitness([...args, '--name', 'witness.example/w1']);
    assert.equal(parseCosignerKey(started.vkey).name, 'witness.example/w1');
    assert.equal((await started.stop()).code, 0);

    const renamed = await witnessRun(...args, '--name', 'witness.example/w2', '--listen', '127.0.0.1:0');
    assert.equal(renamed.code, 1);
    assert.match(renamed.stderr, /is named witness\.example\/w1/);

    chmodSync(path.join(keysDir, 'witness-key.json'), 0o644);
    const open = await witnessRun(...args, '--listen', '127.0.0.1:0');
    assert.equal(open.code, 1);
    assert.match(open.stderr, /open to group or others .*chmod 600/);

    for (const bad of [
      ['--state-dir', stateDir, '--log', log.vkey],
      ['--keys-dir', keysDir, '--state-dir', stateDir],
      ['--keys-dir', keysDir, '--state-dir', stateDir, '--log', 'not-a-key'],
      [...args, '--listen', 'nowhere'],
    ]) {
      const refused = await witnessRun(...bad);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /^hashproof: /);
    }
  });
});

describe('hashproof witness when its record cannot be written', () => {
  test('503 and no cosignature; the log is refused until a restart; a corrupt record stops the start', async () => {
    const keysDir = path.join(dirs(), 'keys');
    const stateDir = path.join(dirs(), 'state');
    const args = ['--keys-dir', keysDir, '--state-dir', stateDir, '--log', log.vkey];
    let witness = await startWitness(args);
    try {
      // A directory where the record's file goes: the rename over it fails, even for root.
      const record = path.join(
        stateDir,
        `checkpoint-${createHash('sha256').update(log.origin).digest('hex')}.json`,
      );
      mkdirSync(path.join(record, 'in-the-way'), { recursive: true });
      const failed = await addCheckpoint(witness.baseUrl, log.request(0, 4));
      assert.equal(failed.status, 503);
      assert.match(failed.text, /could not be stored; nothing was cosigned/);
      assert.doesNotMatch(failed.text, /—/);
      rmSync(record, { recursive: true });
      const still = await addCheckpoint(witness.baseUrl, log.request(0, 4));
      assert.equal(still.status, 503);
      assert.match(still.text, /needs a restart/);
      await witness.stop();
      witness = await startWitness(args);
      assert.match(witness.output, /nothing cosigned yet/);
      assert.equal((await addCheckpoint(witness.baseUrl, log.request(0, 4))).status, 200);
      await witness.stop();

      writeFileSync(record, '{"origin": "log.example/witnessed", "size": 3');
      const refused = await run(process.execPath, [CLI, 'witness', ...args, '--listen', '127.0.0.1:0'], {
        env: { PATH: process.env.PATH },
      });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /witness state file .* is not JSON/);
    } finally {
      await witness.stop();
    }
  });
});
