import path from 'node:path';

/** Below this, a single file is hashed too quickly for progress to be worth showing. */
const LARGE_FILE_BYTES = 64 * 2 ** 20;
/** How often the line is redrawn while a file is hashed. */
const REDRAW_MS = 100;

export interface StampInput {
  file: string;
  /** Undefined for standard input, whose size is known only once it is read. */
  sizeBytes: number | undefined;
}

/**
 * The progress of `hashproof stamp` on a terminal: one line on standard error, redrawn in place, with
 * the files done of the total, the bytes hashed of the total, and what is being done to which file.
 * Shown for many files, or for one larger than 64 MiB, and only when standard error is a terminal:
 * piped, the command writes nothing but its plain result lines.
 */
interface StampProgress {
  /** A file starts hashing: returns the callback for `hashFile`. */
  hashing(input: StampInput): (bytes: number) => void;
  /** The file is hashed. */
  hashed(input: StampInput): void;
  /** The file's proof is being made (with many files: the first file of a batch being sent). */
  stamping(input: StampInput): void;
  /** The command waits `ms` for the service's rate limit to allow the next request. */
  waiting(ms: number): void;
  /** The file is done: its result line is printed on standard output above the progress line. */
  done(input: StampInput, line: string | undefined): void;
  /** Clears the progress line for good. */
  end(): void;
}

export function stampProgress(
  inputs: StampInput[],
  stderr: NodeJS.WriteStream,
  print: (line: string) => void,
): StampProgress {
  const totalBytes = inputs.reduce((sum, input) => sum + (input.sizeBytes ?? 0), 0);
  if (!stderr.isTTY || (inputs.length < 2 && totalBytes <= LARGE_FILE_BYTES)) {
    return {
      hashing: () => () => {},
      hashed: () => {},
      stamping: () => {},
      waiting: () => {},
      done: (_input, line) => line !== undefined && print(line),
      end: () => {},
    };
  }
  let filesDone = 0;
  /** Bytes of the files hashed so far. */
  let bytesDone = 0;
  let bytesOfFile = 0;
  let lastDrawMs = 0;
  let isShown = false;
  const clear = () => {
    if (isShown) stderr.write('\r\x1b[K');
    isShown = false;
  };
  const draw = (action: string, input: StampInput | undefined) => {
    lastDrawMs = Date.now();
    const bytes = bytesDone + bytesOfFile;
    // Bytes measure the hashing, files the proofs made: the bar is full when both are done.
    const fraction = ((totalBytes > 0 ? bytes / totalBytes : 0) + filesDone / inputs.length) / 2;
    const filled = Math.min(20, Math.floor(20 * fraction));
    const status =
      `[${'#'.repeat(filled)}${'.'.repeat(20 - filled)}] ${filesDone}/${inputs.length} files  ` +
      `${formatBytes(bytes)}/${formatBytes(totalBytes)}  ${action} `;
    const name = input === undefined ? '' : input.file === '-' ? 'standard input' : path.basename(input.file);
    const width = Math.max((stderr.columns || 80) - 1, status.length + 8);
    const room = width - status.length;
    stderr.write(`\r\x1b[K${status}${name.length > room ? '…' + name.slice(name.length - room + 1) : name}`);
    isShown = true;
  };
  return {
    hashing(input) {
      bytesOfFile = 0;
      draw('hashing', input);
      return (bytes) => {
        bytesOfFile = bytes;
        if (Date.now() - lastDrawMs >= REDRAW_MS) draw('hashing', input);
      };
    },
    hashed(input) {
      bytesDone += input.sizeBytes ?? bytesOfFile;
      bytesOfFile = 0;
    },
    stamping: (input) => draw('stamping', input),
    waiting: (ms) => draw(`waiting ${Math.ceil(ms / 1000)} s for the rate limit`, undefined),
    done(input, line) {
      filesDone += 1;
      clear();
      if (line !== undefined) print(line);
      draw('done', input);
    },
    end: clear,
  };
}

function formatBytes(bytes: number): string {
  if (bytes < 2 ** 10) return `${bytes} B`;
  if (bytes < 2 ** 20) return `${(bytes / 2 ** 10).toFixed(1)} KiB`;
  if (bytes < 2 ** 30) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}
