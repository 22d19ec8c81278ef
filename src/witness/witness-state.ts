import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../client/atomic-file.ts';
import { decodeBase64Strict } from '../core/cosignature.ts';

/**
 * The witness's record, one file per log in its state directory: `checkpoint-<SHA-256 of the origin,
 * hex>.json` holds the size and root of the latest checkpoint it cosigned, and that checkpoint as a note
 * (the log's signatures it verified and its own cosignature). A file is replaced atomically and flushed
 * (client/atomic-file.ts) before the cosignature is answered; a size never goes down, since a new one
 * is stored only after the consistency checks against the stored one.
 */
export interface CosignedCheckpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
  /** The cosigned checkpoint as a signed note, as served to monitors. */
  note: string;
}

interface StoredCheckpoint {
  origin: string;
  size: number;
  rootHash: string;
  note: string;
}

export const originHash = (origin: string): string =>
  createHash('sha256').update(origin, 'utf8').digest('hex');

export class WitnessState {
  readonly #dir: string;
  readonly #latest = new Map<string, CosignedCheckpoint>();
  readonly #unreadable = new Set<string>();

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Opens the state directory (made if missing) and reads the record of each origin. */
  static async open(dir: string, origins: readonly string[]): Promise<WitnessState> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const state = new WitnessState(dir);
    for (const origin of origins) {
      const stored = await state.read(origin);
      if (stored !== undefined) state.#latest.set(origin, stored);
    }
    return state;
  }

  #file(origin: string): string {
    return path.join(this.#dir, `checkpoint-${originHash(origin)}.json`);
  }

  /** The stored record of `origin` as on disk; a file that cannot be read as one stops the witness. */
  async read(origin: string): Promise<CosignedCheckpoint | undefined> {
    const file = this.#file(origin);
    let text;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    let stored: StoredCheckpoint;
    try {
      stored = JSON.parse(text) as StoredCheckpoint;
    } catch {
      throw new Error(`witness state file ${file} is not JSON`);
    }
    const rootHash = decodeBase64Strict(String(stored.rootHash));
    if (
      stored.origin !== origin ||
      !Number.isSafeInteger(stored.size) ||
      stored.size < 0 ||
      rootHash?.length !== 32 ||
      typeof stored.note !== 'string'
    )
      throw new Error(`witness state file ${file} is not a record of ${origin}`);
    return { origin, size: stored.size, rootHash, note: stored.note };
  }

  /** Whether the record of `origin` could not be read again after a failed write. */
  unavailable(origin: string): boolean {
    return this.#unreadable.has(origin);
  }

  /** The latest checkpoint cosigned for `origin`, if any. */
  latest(origin: string): CosignedCheckpoint | undefined {
    return this.#latest.get(origin);
  }

  /** The latest checkpoint of the origin whose SHA-256 (hex) is `hash`, if any (for monitors). */
  latestByHash(hash: string): CosignedCheckpoint | undefined {
    for (const [origin, checkpoint] of this.#latest) if (originHash(origin) === hash) return checkpoint;
    return undefined;
  }

  /**
   * Stores `checkpoint` durably, then remembers it. Should the write fail, what is on disk is read again:
   * the record in memory is never ahead of the disk, nor behind it; should that read fail too, the
   * origin is `unavailable` until the witness starts again.
   */
  async store(checkpoint: CosignedCheckpoint): Promise<void> {
    const stored: StoredCheckpoint = {
      origin: checkpoint.origin,
      size: checkpoint.size,
      rootHash: checkpoint.rootHash.toString('base64'),
      note: checkpoint.note,
    };
    try {
      await writeFileAtomic(this.#file(checkpoint.origin), `${JSON.stringify(stored)}\n`);
    } catch (error) {
      try {
        const onDisk = await this.read(checkpoint.origin);
        if (onDisk === undefined) this.#latest.delete(checkpoint.origin);
        else this.#latest.set(checkpoint.origin, onDisk);
      } catch {
        this.#unreadable.add(checkpoint.origin); // refused until a restart reads it again
      }
      throw error;
    }
    this.#latest.set(checkpoint.origin, checkpoint);
  }
}
