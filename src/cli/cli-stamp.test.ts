import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run } from '../../test/process.ts';
import { CLI, cli, server, withCliServer, work } from './cli-test-setup.ts';

withCliServer();

const sha256 = async (text: string) =>
  'sha256:' + (await import('node:crypto')).createHash('sha256').update(text).digest('hex');

describe('hashproof stamp', () => {
  test('a file: one proof, a .proof.json beside it, the page link printed; a re-run creates nothing new', async () => {
    const file = path.join(work, 'report.pdf');
    writeFileSync(file, 'quarterly numbers');
    const first = await cli(['stamp', file, '--metadata', 'team=finance']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      new RegExp(`^stamped ${file}  ${server.baseUrl}/proof/proof_[0-9A-Z]{26}\\n$`),
    );
    const written = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    assert.equal(written.proof.contentHash, await sha256('quarterly numbers'));
    assert.equal(written.proof.label, 'report.pdf');
    assert.deepEqual(written.proof.metadataKeys, ['team']);
    const again = await cli(['stamp', file, '--metadata', 'team=finance', '--json']);
    assert.equal(again.code, 0, again.stderr);
    const result = JSON.parse(again.stdout);
    assert.equal(result.idempotentReplay, true);
    assert.equal(result.proof.id, written.proof.id);
  });

  test('a directory, recursively, skipping proof files', async () => {
    const dir = path.join(work, 'release');
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'a.bin'), 'a');
    writeFileSync(path.join(dir, 'sub', 'b.bin'), 'b');
    const run = await cli(['stamp', dir, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const results = JSON.parse(run.stdout);
    assert.deepEqual(
      results.map((r: { file: string }) => path.relative(dir, r.file)),
      ['a.bin', 'sub/b.bin'],
    );
    const rerun = await cli(['stamp', dir, '--json']);
    assert.deepEqual(
      JSON.parse(rerun.stdout).map((r: { idempotentReplay: boolean }) => r.idempotentReplay),
      [true, true],
    );
    // Piped, many files give plain lines, one a file, and no progress.
    const plain = await cli(['stamp', dir]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stderr, '');
    const page = `${server.baseUrl.replaceAll('.', '\\.')}/proof/proof_[0-9A-Z]{26}`;
    assert.match(
      plain.stdout,
      new RegExp(
        `^already stamped ${dir}/a\\.bin  ${page}\\nalready stamped ${dir}/sub/b\\.bin  ${page}\\n$`,
      ),
    );
  });

  test('on a terminal, many files or a large one show their progress (files and bytes done); one small file none', async (t) => {
    if ((await run('sh', ['-c', 'command -v script'])).code !== 0)
      return t.skip('needs script(1) from util-linux for a pseudo-terminal');
    const dir = path.join(work, 'terminal');
    mkdirSync(dir);
    const big = path.join(dir, 'disk.img');
    const fd = openSync(big, 'w');
    ftruncateSync(fd, 65 * 2 ** 20); // sparse, over the 64 MiB that shows one file's progress
    closeSync(fd);
    // script(1) runs the command on a pseudo-terminal: standard output and error both reach it.
    // The line is redrawn after a carriage return and an erase to the end of the line (ESC [ K).
    const onTerminal = async (args: string[]) => {
      const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
      const shown = await run('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl },
      });
      assert.equal(shown.code, 0, shown.stdout);
      return shown.stdout.replaceAll('\r\x1b[K', '<redraw>');
    };
    const notes = path.join(dir, 'notes.txt');
    const readme = path.join(dir, 'readme.txt');
    writeFileSync(notes, 'terminal notes');
    writeFileSync(readme, 'terminal readme');
    const many = await onTerminal(['stamp', notes, readme]);
    assert.match(many, /^<redraw>\[\.{20}\] 0\/2 files {2}0 B\/29 B {2}hashing notes\.txt<redraw>/);
    assert.match(many, /<redraw>\[[#.]{20}\] 0\/2 files {2}14 B\/29 B {2}hashing readme\.txt<redraw>/);
    // Many files go in batches: every file is hashed, then the batch is sent (named by its first file).
    assert.match(many, /<redraw>\[[#.]{20}\] 0\/2 files {2}29 B\/29 B {2}stamping notes\.txt<redraw>/);
    assert.match(many, /\] 1\/2 files {2}29 B\/29 B {2}done notes\.txt<redraw>/);
    assert.match(many, /\[#{20}\] 2\/2 files {2}29 B\/29 B {2}done readme\.txt<redraw>$/);
    for (const file of [notes, readme]) {
      const line = `<redraw>stamped ${file}  ${server.baseUrl}/proof/`;
      assert.ok(many.includes(line), 'each result line is printed over a cleared progress line');
    }
    const large = await onTerminal(['stamp', big]);
    assert.match(large, /\] 0\/1 files {2}0 B\/65\.0 MiB {2}hashing disk\.img<redraw>/);
    assert.match(large, /\] 1\/1 files {2}65\.0 MiB\/65\.0 MiB {2}done disk\.img<redraw>$/);
    const one = await onTerminal(['stamp', notes]);
    assert.match(one, /^already stamped \S+notes\.txt {2}http\S+\r\n$/, 'a plain line, no progress');
  });

  test('standard input', async () => {
    const run = await cli(['stamp', '-', '--label', 'piped build log', '--json'], {
      stdin: 'log line 1\nlog line 2\n',
    });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    assert.equal(result.proof.contentHash, await sha256('log line 1\nlog line 2\n'));
    assert.equal(result.proof.label, 'piped build log');
  });

  test('a large file is hashed as a stream, in bounded memory', async () => {
    const file = path.join(work, 'big.img');
    const fd = openSync(file, 'w');
    ftruncateSync(fd, 512 * 2 ** 20); // 512 MiB of zeros, sparse on disk
    closeSync(fd);
    const run = await cli(['stamp', file, '--json'], { env: { HASHPROOF_REPORT_MAX_RSS: '1' } });
    assert.equal(run.code, 0, run.stderr);
    const maxRssKb = Number(/maxRSS (\d+)/.exec(run.stderr)?.[1]);
    assert.ok(maxRssKb > 0 && maxRssKb < 200 * 1024, `max RSS ${maxRssKb} kB for a 512 MiB file`);
    // sha256 of 512 MiB of zero bytes, from sha256sum
    assert.equal(
      JSON.parse(run.stdout).proof.contentHash,
      'sha256:9acca8e8c22201155389f65abbf6bc9723edc7384ead80503839f49dcc56d767',
    );
  });
});
