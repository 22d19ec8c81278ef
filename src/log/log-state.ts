import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../client/atomic-file.ts';
import { openNote, parseCheckpoint, parseVerifierKey, type NoteVerifier } from '../core/signed-note.ts';
import type { SignedCheckpoint } from './log-store.ts';

/** A checkpoint the log published, as recorded outside its database, and the file that holds it. */
export interface RecordedCheckpoint extends SignedCheckpoint {
  file: string;
}

/** The name of a record file of any log (below); a backup copies and restores these alone as log state. */
export const isLogRecordName = (name: string): boolean =>
  /^log-checkpoint-[0-9a-f]{16}-(0|[1-9]\d{0,15})$/.test(name);

/** A temporary file left by a writer that died before its rename is removed once it is this old. */
const STALE_TEMP_MS = 10 * 60_000;

/**
 * The record of the latest checkpoint the log published, kept outside the database, so that a database
 * restored from an older backup cannot lead the log to sign a tree inconsistent with it (docs/deploy.md,
 * "Restoring a backup"). Each recorded tree size is a file of its own, `log-checkpoint-<log>-<size>`,
 * holding the signed note verbatim (mode 0600). A writer never replaces a record: it adds the file of a
 * larger tree (written to a temporary file, flushed, renamed) and then removes those of smaller trees.
 * So instances sharing the directory only ever move the record forward, in whatever order their writes
 * land. `<log>` is a hash of the log's origin: logs sharing a directory keep records of their own.
 */
export class LogStateFiles {
  readonly dir: string;
  /** Every file of this log's record starts with it. */
  readonly prefix: string;
  readonly #origin: string;
  readonly #verifier: NoteVerifier;
  readonly #name: RegExp;

  constructor(dir: string, origin: string, verifierKey: string) {
    this.dir = dir;
    this.#origin = origin;
    this.#verifier = parseVerifierKey(verifierKey);
    this.prefix = `log-checkpoint-${createHash('sha256').update(origin).digest('hex').slice(0, 16)}-`;
    this.#name = new RegExp(`^${this.prefix}(0|[1-9]\\d{0,15})$`);
  }

  /** Creates the directory (0700) when it is missing; throws when it cannot be written. */
  async open(): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    try {
      await access(this.dir, constants.W_OK);
    } catch {
      throw new Error(
        `the log state directory ${this.dir} cannot be written: set LOG_STATE_DIR to a writable directory (docs/deploy.md)`,
      );
    }
    for (const name of await readdir(this.dir)) {
      if (!name.startsWith(`.${this.prefix}`) || !name.endsWith('.tmp')) continue;
      const file = path.join(this.dir, name);
      const age = Date.now() - (await stat(file).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > STALE_TEMP_MS) await rm(file, { force: true });
    }
  }

  /**
   * The largest recorded checkpoint, undefined when there is none. Throws when the file is not a
   * checkpoint of this log signed with its key.
   */
  async latest(): Promise<RecordedCheckpoint | undefined> {
    for (;;) {
      const size = (await this.#sizes()).at(-1);
      if (size === undefined) return undefined;
      const file = this.#file(size);
      let note: string;
      try {
        note = await readFile(file, 'utf8');
      } catch (error) {
        // Another instance recorded a larger tree and removed this one meanwhile: look again.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw error;
      }
      let checkpoint;
      try {
        checkpoint = parseCheckpoint(openNote(note, this.#verifier));
      } catch (error) {
        throw new Error(
          `${path.basename(file)} is not a checkpoint signed with this log's key (${(error as Error).message})`,
        );
      }
      if (checkpoint.origin !== this.#origin || checkpoint.size !== size)
        throw new Error(
          `${path.basename(file)} holds the checkpoint of ${checkpoint.origin} at ${checkpoint.size} entries`,
        );
      return { treeSize: size, rootHash: checkpoint.rootHash, checkpoint: note, file };
    }
  }

  /**
   * Records a checkpoint the log published, unless a tree at least as large is recorded already, and
   * removes the records of smaller trees. Returns the file that records the largest tree.
   */
  async write(checkpoint: SignedCheckpoint): Promise<string> {
    const largest = (await this.#sizes()).at(-1) ?? -1;
    if (largest >= checkpoint.treeSize) return this.#file(largest);
    const file = this.#file(checkpoint.treeSize);
    // Hidden as `.<file>.<random>.tmp` until renamed: `open` removes those a dead writer left.
    await writeFileAtomic(file, checkpoint.checkpoint, 0o600);
    for (const size of await this.#sizes()) {
      if (size < checkpoint.treeSize) await rm(this.#file(size), { force: true });
    }
    return file;
  }

  /** The recorded tree sizes, smallest first. */
  async #sizes(): Promise<number[]> {
    const sizes: number[] = [];
    for (const name of await readdir(this.dir)) {
      const size = this.#name.exec(name)?.[1];
      if (size !== undefined) sizes.push(Number(size));
    }
    return sizes.sort((a, b) => a - b);
  }

  #file(size: number): string {
    return path.join(this.dir, `${this.prefix}${size}`);
  }
}
