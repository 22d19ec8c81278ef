import { BoundedMap } from '../core/bounded-map.ts';
import { verifyCosignature } from '../core/cosignature.ts';
import { parseCheckpoint } from '../core/signed-note.ts';
import type { Witness } from './witnessing.ts';
import type { WitnessStore } from './witness-store.ts';

/** Tree sizes whose cosignatures are kept in memory. */
const CACHE_SIZE = 1_000;
/** A size that lacks a configured witness's cosignature is read again after this long. */
const INCOMPLETE_TTL_MS = 250;

/**
 * The log's checkpoints as served: the signed note, byte for byte, with the cosignature lines of the
 * configured witnesses appended after the log's own signature line (C2SP signed-note lets a note carry
 * more signatures; verifiers ignore the keys they do not know). A line is added only when it was
 * stored for the same tree size and root and verifies, here again, over the note's text; lines come
 * in the order the witnesses are configured.
 */
export class CosignedCheckpoints {
  readonly #store: WitnessStore;
  readonly #witnesses: Witness[];
  readonly #cache = new BoundedMap<string, { lines: string[]; readAt: number; complete: boolean }>(
    CACHE_SIZE,
  );

  constructor(store: WitnessStore, witnesses: Witness[]) {
    this.#store = store;
    this.#witnesses = witnesses;
  }

  /** The largest tree size at least `quorum` configured witnesses cosigned; undefined when none (or none is configured). */
  newestSize(quorum: number): Promise<number | undefined> {
    return this.#store.newestSize(
      this.#witnesses.map((w) => w.vkey),
      quorum,
    );
  }

  /** The note with the cosignatures the log has of it; the note itself when none (or no witness). */
  async cosigned(note: string): Promise<string> {
    if (this.#witnesses.length === 0) return note;
    const split = note.lastIndexOf('\n\n');
    if (split < 0) return note;
    const text = note.slice(0, split + 1);
    const { size, rootHash } = parseCheckpoint(text);
    const key = `${size}/${rootHash.toString('base64')}`;
    let known = this.#cache.get(key);
    if (known === undefined || (!known.complete && performance.now() - known.readAt > INCOMPLETE_TTL_MS)) {
      const stored = await this.#store.at(size);
      const lines: string[] = [];
      for (const witness of this.#witnesses) {
        const row = stored.find((c) => c.witness === witness.vkey && c.rootHash.equals(rootHash));
        if (row === undefined) continue;
        try {
          verifyCosignature(text, row.line, witness.cosigner);
          lines.push(row.line);
        } catch {
          // Stored for another note of that size and root (a log restored elsewhere): not served.
        }
      }
      known = { lines, readAt: performance.now(), complete: lines.length === this.#witnesses.length };
      this.#cache.set(key, known);
    }
    return known.lines.length === 0 ? note : `${note}${known.lines.map((line) => `${line}\n`).join('')}`;
  }
}
