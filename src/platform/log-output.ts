import { writeSync, writevSync } from 'node:fs';

interface LogOutputOptions {
  /** Characters gathered before a write. */
  batchChars?: number;
  /** The longest a line waits before it is written. */
  flushMs?: number;
  /** The most bytes kept while the output takes nothing (EAGAIN); the oldest lines beyond it are dropped. */
  maxBacklogBytes?: number;
  /** Told once, when the output has failed for good; every line after that is dropped. */
  onFailure?: (error: NodeJS.ErrnoException) => void;
}

/**
 * Log lines (pino writes one JSON object per line here) gathered in memory and written to a file
 * descriptor about 4 KB at a time, or after at most 100 ms, instead of one system call per line on the
 * thread that serves requests. Writing never waits and never loops on an error: when the output is full
 * (EAGAIN) the bytes wait for the next flush, up to a cap beyond which the oldest lines are dropped;
 * when it is gone (EPIPE, EBADF, anything else) writing stops for good. pino's own buffered destination
 * (sonic-boom) cannot be made to do this: its `flushSync` sleeps and retries for ever on any error other
 * than EAGAIN, so a closed standard output froze the whole process.
 */
export class LogOutput {
  readonly #fd: number;
  readonly #batchChars: number;
  readonly #maxBacklogBytes: number;
  readonly #onFailure: (error: NodeJS.ErrnoException) => void;
  readonly #timer: NodeJS.Timeout;
  #lines: string[] = [];
  #chars = 0;
  /** Batches the output has not taken yet; the first may be partly written. */
  #backlog: Buffer[] = [];
  #backlogBytes = 0;
  #headPartlyWritten = false;
  /** The line that stands for dropped ones, kept at the front of what is not written yet. */
  #note: Buffer | undefined;
  #droppedLines = 0;
  #failed = false;

  constructor(fd: number, options: LogOutputOptions = {}) {
    this.#fd = fd;
    this.#batchChars = options.batchChars ?? 4096;
    this.#maxBacklogBytes = options.maxBacklogBytes ?? 1024 * 1024;
    this.#onFailure = options.onFailure ?? (() => {});
    this.#timer = setInterval(() => this.flush(), options.flushMs ?? 100).unref();
  }

  write(line: string): void {
    if (this.#failed) return;
    this.#lines.push(line);
    this.#chars += line.length;
    if (this.#chars < this.#batchChars) return;
    // While the output is full, only the timer tries again: a write per batch would copy nothing out.
    if (this.#backlog.length === 0) this.flush();
    else this.#seal();
  }

  /** Writes what the output takes now; never waits for it. pino calls it with a callback. */
  flush(callback?: (error?: Error) => void): void {
    this.#seal();
    while (!this.#failed && this.#backlog.length > 0) {
      let written: number;
      try {
        written = writevSync(this.#fd, this.#backlog);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') this.#fail(error as NodeJS.ErrnoException);
        break;
      }
      if (written === 0) break;
      this.#advance(written);
    }
    callback?.();
  }

  /** Stops the timer (the output itself stays open: it is not this object's). */
  close(): void {
    this.flush();
    clearInterval(this.#timer);
  }

  #seal(): void {
    if (this.#lines.length === 0 || this.#failed) return;
    const batch = Buffer.from(this.#lines.join(''));
    this.#lines = [];
    this.#chars = 0;
    this.#backlog.push(batch);
    this.#backlogBytes += batch.length;
    if (this.#backlogBytes > this.#maxBacklogBytes) this.#dropOldest();
  }

  #advance(written: number): void {
    let left = written;
    while (left > 0) {
      const head = this.#backlog[0]!;
      if (head === this.#note) this.#note = undefined;
      if (left >= head.length) {
        this.#backlog.shift();
        this.#backlogBytes -= head.length;
        left -= head.length;
        this.#headPartlyWritten = false;
      } else {
        this.#backlog[0] = head.subarray(left);
        this.#backlogBytes -= left;
        this.#headPartlyWritten = true;
        left = 0;
      }
    }
  }

  /** Drops whole batches after the one being written (never a line cut in two) and says how many lines. */
  #dropOldest(): void {
    const first = this.#headPartlyWritten ? 1 : 0;
    if (this.#note !== undefined && this.#backlog[first] === this.#note) {
      // Not written yet: replaced below by one that counts these drops too.
      this.#backlog.splice(first, 1);
      this.#backlogBytes -= this.#note.length;
    } else {
      this.#droppedLines = 0;
    }
    while (this.#backlogBytes > this.#maxBacklogBytes && this.#backlog.length > first + 1) {
      const [dropped] = this.#backlog.splice(first, 1);
      this.#backlogBytes -= dropped!.length;
      this.#droppedLines += countLines(dropped!);
    }
    this.#note = Buffer.from(
      `${JSON.stringify({ level: 40, time: Date.now(), msg: `${this.#droppedLines} log lines dropped: the output took nothing for a while` })}\n`,
    );
    this.#backlog.splice(first, 0, this.#note);
    this.#backlogBytes += this.#note.length;
  }

  #fail(error: NodeJS.ErrnoException): void {
    this.#failed = true;
    this.#lines = [];
    this.#backlog = [];
    this.#backlogBytes = 0;
    clearInterval(this.#timer);
    this.#onFailure(error);
  }
}

function countLines(buffer: Buffer): number {
  let count = 0;
  for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) count++;
  return count;
}

let stdout: LogOutput | undefined;

/**
 * The process's standard output for log lines, one per process; whatever is buffered is written when the
 * process exits, also after an uncaught error. Only a process killed outright loses its last 100 ms.
 */
export function standardOutput(): LogOutput {
  if (stdout === undefined) {
    const output = new LogOutput(1, {
      onFailure: (error) => {
        try {
          writeSync(
            2,
            `hashproof: standard output failed (${error.code}); log lines are dropped from now on\n`,
          );
        } catch {
          // standard error is gone too: there is no one left to tell
        }
      },
    });
    process.on('exit', () => output.flush());
    stdout = output;
  }
  return stdout;
}
