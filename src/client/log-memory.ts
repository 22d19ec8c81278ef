import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';
import {
  compareCheckpoints,
  describeCheckpoint,
  openCheckpoint,
  readCheckpoint,
  type LogCheckpoint,
} from '../verify/log-checkpoints.ts';

/**
 * What a client remembers of each log it talks to, so that a log showing it a tree that does not
 * extend one it saw before is caught (a fork, or history rewritten): the largest checkpoint it verified,
 * per log origin, in a directory of its own (docs/cli.md, "Remembered checkpoints").
 */

/** A log that failed a check: the message is one line, `log fork detected: …` for a fork. */
export class LogCheckError extends Error {
  readonly kind: 'fork' | 'checkpoint' | 'tiles';
  constructor(kind: LogCheckError['kind'], message: string) {
    super(message);
    this.name = 'LogCheckError';
    this.kind = kind;
  }
}

/**
 * A log that could not be checked: no consistency proof came back (a network error, a timeout, a 429,
 * a 4xx or a 5xx, a malformed answer). It says nothing against the log; the message is one line,
 * `could not check the log: …`, and nothing is remembered.
 */
export class LogUncheckedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LogUncheckedError';
  }
}

/** What is remembered of one log. */
export interface Remembered {
  /** The largest checkpoint verified (signature, and consistency with the one before). */
  checkpoint: LogCheckpoint;
  /** How many entries a monitor checked against the log's tiles (0 when none). */
  monitoredSize: number;
  file: string;
}

export interface Observation {
  /** The checkpoint observed, verified. */
  checkpoint: LogCheckpoint;
  /** The checkpoint remembered before, when there was one. */
  previous: LogCheckpoint | undefined;
  /** The log's first checkpoint seen, the same, a larger tree, or an older one (a consistent rollback). */
  growth: 'first' | 'same' | 'grew' | 'older';
}

/**
 * A consistency proof between two tree sizes of the log; undefined, or a rejection, when the log gives
 * none (the log then cannot be checked: `LogUncheckedError`).
 */
export type ConsistencyProver = (from: number, to: number) => Promise<Uint8Array[] | undefined>;

interface StoredLog {
  origin: string;
  checkpoint: string;
  monitoredSize?: number;
}

/** HASHPROOF_STATE_DIR, else `$XDG_STATE_HOME/hashproof`, else `~/.local/state/hashproof`. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HASHPROOF_STATE_DIR) return path.resolve(env.HASHPROOF_STATE_DIR);
  const xdg = env.XDG_STATE_HOME;
  // The XDG base directory specification ignores a relative path.
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'hashproof');
  return path.join(os.homedir(), '.local', 'state', 'hashproof');
}

/** The checkpoints remembered in one directory: one JSON file per log, named after a hash of its origin. */
export class LogMemory {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  async recall(origin: string): Promise<Remembered | undefined> {
    const file = this.#file(origin);
    let stored: StoredLog;
    try {
      stored = JSON.parse(await readFile(file, 'utf8')) as StoredLog;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`${file}: not a remembered log checkpoint (${(error as Error).message})`);
    }
    const checkpoint = readCheckpoint(stored.checkpoint);
    if (stored.origin !== origin || checkpoint.origin !== origin)
      throw new Error(`${file}: remembers another log than ${origin}`);
    return { checkpoint, monitoredSize: stored.monitoredSize ?? 0, file };
  }

  /**
   * Verifies a checkpoint the log served: its signature with the log's key, then its consistency with
   * the one remembered (`prove` fetches the consistency proof from the smaller tree to the larger).
   * Remembers it when it is larger and consistent; throws `LogCheckError` when it is not (a proof that
   * does not verify, two trees of one size), `LogUncheckedError` when no proof came back, remembering
   * nothing either way.
   * A smaller tree (the log served an older checkpoint) must be consistent too, and is not remembered.
   */
  async observe(note: string, verifierKey: string, prove: ConsistencyProver): Promise<Observation> {
    let checkpoint: LogCheckpoint;
    try {
      checkpoint = openCheckpoint(note, verifierKey);
    } catch (error) {
      throw new LogCheckError(
        'checkpoint',
        `log checkpoint rejected: it does not verify with the log key ${verifierKey} (${(error as Error).message})`,
      );
    }
    const remembered = await this.recall(checkpoint.origin);
    if (remembered === undefined) {
      await this.#save(checkpoint, 0);
      return { checkpoint, previous: undefined, growth: 'first' };
    }
    const previous = remembered.checkpoint;
    const [from, to] = [Math.min(previous.size, checkpoint.size), Math.max(previous.size, checkpoint.size)];
    // Only a proof received and found false is a fork; no proof at all leaves the log unchecked.
    const proof = from === to || from === 0 ? [] : await this.#proof(prove, from, to, checkpoint.origin);
    const comparison = compareCheckpoints(previous, checkpoint, proof);
    if (!comparison.consistent) {
      const served = checkpoint.size < previous.size ? 'an older checkpoint' : 'a checkpoint';
      throw new LogCheckError(
        'fork',
        `log fork detected: ${checkpoint.origin}: the service served ${served} (${describeCheckpoint(checkpoint)}) ` +
          `inconsistent with the one seen before (${describeCheckpoint(previous)}; remembered in ${remembered.file}): ${comparison.reason}`,
      );
    }
    if (comparison.growth === 'grew') await this.#save(checkpoint, remembered.monitoredSize);
    return { checkpoint, previous, growth: comparison.growth };
  }

  async #proof(prove: ConsistencyProver, from: number, to: number, origin: string): Promise<Uint8Array[]> {
    const unchecked = (why: string, cause?: unknown) =>
      new LogUncheckedError(
        `could not check the log: ${origin}: no consistency proof from size ${from} to ${to} (${why})`,
        { cause },
      );
    let proof: Uint8Array[] | undefined;
    try {
      proof = await prove(from, to);
    } catch (error) {
      throw unchecked(error instanceof Error ? error.message : String(error), error);
    }
    if (proof === undefined) throw unchecked('the log gives none');
    return proof;
  }

  /** Remembers that a monitor checked the log's first `size` entries against its tiles. */
  async monitored(origin: string, size: number): Promise<void> {
    const remembered = await this.recall(origin);
    if (remembered === undefined || size <= remembered.monitoredSize) return;
    await this.#save(remembered.checkpoint, Math.min(size, remembered.checkpoint.size));
  }

  /**
   * Writes a log's record atomically (`writeFileAtomic`, mode 0600).
   * A record of a larger tree written meanwhile (another command) is kept.
   */
  async #save(checkpoint: LogCheckpoint, monitoredSize: number): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const current = await this.recall(checkpoint.origin).catch(() => undefined);
    if (current !== undefined && current.checkpoint.size > checkpoint.size) return;
    const file = this.#file(checkpoint.origin);
    const stored: StoredLog = { origin: checkpoint.origin, checkpoint: checkpoint.note, monitoredSize };
    await writeFileAtomic(file, JSON.stringify(stored, null, 2) + '\n');
  }

  #file(origin: string): string {
    return path.join(this.dir, `log-${createHash('sha256').update(origin).digest('hex').slice(0, 16)}.json`);
  }
}
