import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import { makeDataDir } from '../../test/helper.ts';
import { LogOutput } from './log-output.ts';

/** A real pipe (a FIFO) opened at both ends without blocking, so a full pipe answers EAGAIN. */
function pipe(): { reader: number; writer: number; dispose: () => void } {
  const dir = makeDataDir();
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  return {
    reader,
    writer,
    dispose: () => {
      for (const fd of [reader, writer]) {
        try {
          closeSync(fd);
        } catch {
          // closed by the test
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Everything the pipe holds now. */
function drain(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, buffer);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
  }
  return Buffer.concat(chunks).toString();
}

const line = (i: number) => `${JSON.stringify({ level: 30, n: i, msg: 'x'.repeat(80) })}\n`;

test('a pipe nobody reads: writes never wait, at most the cap is kept, the oldest lines are dropped and counted', (t) => {
  const { reader, writer, dispose } = pipe();
  const cap = 256 * 1024;
  const output = new LogOutput(writer, { maxBacklogBytes: cap, flushMs: 60_000 });
  t.after(() => {
    output.close();
    dispose();
  });
  // Far more than the pipe (64 KiB) and the cap hold together.
  const total = 40_000;
  const started = performance.now();
  for (let i = 0; i < total; i++) output.write(line(i));
  output.flush();
  const elapsed = performance.now() - started;

  // The reader comes back: what the pipe held, then the backlog, flush after flush.
  let text = drain(reader);
  for (let round = 0; round < 100; round++) {
    output.flush();
    const more = drain(reader);
    if (more === '') break;
    text += more;
  }
  assert.ok(text.endsWith('\n'));
  const lines = text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as { n?: number; msg: string });
  const numbers = lines.flatMap((l) => (l.n === undefined ? [] : [l.n]));
  const notes = lines.filter((l) => l.n === undefined);
  assert.equal(numbers.at(-1), total - 1, 'the newest line is kept');
  assert.equal(numbers[0], 0, 'what the pipe took first stays');
  for (let i = 1; i < numbers.length; i++) assert.ok(numbers[i]! > numbers[i - 1]!, 'in order');
  assert.equal(notes.length, 1, JSON.stringify(notes));
  const dropped = total - numbers.length;
  assert.equal(notes[0]!.msg, `${dropped} log lines dropped: the output took nothing for a while`);
  assert.ok(dropped > 30_000, `${dropped} dropped`);
  assert.ok(text.length < 64 * 1024 + cap + 8192, `${text.length} bytes kept`);
  t.diagnostic(`${total} lines in ${elapsed.toFixed(0)} ms; ${numbers.length} kept, ${dropped} dropped`);
});

test('an output that is gone (EPIPE, EBADF) stops writing at once, says so once, and drops every later line', (t) => {
  for (const how of ['EPIPE', 'EBADF'] as const) {
    const { reader, writer, dispose } = pipe();
    const failures: string[] = [];
    const output = new LogOutput(writer, { flushMs: 60_000, onFailure: (e) => failures.push(e.code!) });
    try {
      output.write(line(0));
      output.flush();
      assert.equal(JSON.parse(drain(reader)).n, 0, 'the output works before it goes');
      closeSync(how === 'EPIPE' ? reader : writer);
      const started = performance.now();
      for (let i = 1; i <= 100_000; i++) output.write(line(i));
      output.flush();
      output.flush();
      assert.deepEqual(failures, [how]);
      t.diagnostic(
        `${how}: 100,000 lines after the failure in ${(performance.now() - started).toFixed(0)} ms`,
      );
    } finally {
      output.close();
      dispose();
    }
  }
});
