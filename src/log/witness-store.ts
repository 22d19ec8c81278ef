import type { Db } from '../db/index.ts';
import { releaseLease, takeLease } from '../db/lease.ts';

/** Every read and write of the witness tables (migration 0014-witnesses). */

export interface StoredCosignature {
  treeSize: number;
  /** The witness's verifier key. */
  witness: string;
  rootHash: Buffer;
  /** The signature line, without its final newline. */
  line: string;
  /** The cosignature's timestamp, POSIX seconds. */
  cosignedAt: number;
}

export interface WitnessHealth {
  witness: string;
  /** The tree size the witness last said it cosigned; null before it said. */
  cosignedSize: number | null;
  failures: number;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  lastError: string | null;
}

/** How many of the newest cosignatures a search for a cosigned size reads. */
const NEWEST_ROWS = 1_000;

export class WitnessStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Takes or renews the witnessing lease for `holder` until `until` (db/lease.ts). */
  lease(holder: string, now: number, until: number): Promise<boolean> {
    return takeLease(this.#db, 'witness_lease', holder, now, until);
  }

  release(holder: string): Promise<void> {
    return releaseLease(this.#db, 'witness_lease', holder);
  }

  /** Stores a checked cosignature; a witness's first cosignature of a tree size is kept. */
  async add(cosignature: StoredCosignature, now: number): Promise<void> {
    await this.#db
      .insertInto('witness_cosignatures')
      .values({
        tree_size: cosignature.treeSize,
        witness: cosignature.witness,
        root_hash: cosignature.rootHash.toString('base64'),
        line: cosignature.line,
        cosigned_at: cosignature.cosignedAt,
        created_at: now,
      })
      .onConflict((oc) => oc.columns(['tree_size', 'witness']).doNothing())
      .execute();
  }

  /** The cosignatures of one tree size, of any witness. */
  async at(treeSize: number): Promise<StoredCosignature[]> {
    const rows = await this.#db
      .selectFrom('witness_cosignatures')
      .select(['tree_size', 'witness', 'root_hash', 'line', 'cosigned_at'])
      .where('tree_size', '=', treeSize)
      .execute();
    return rows.map((row) => ({
      treeSize: Number(row.tree_size),
      witness: row.witness,
      rootHash: Buffer.from(row.root_hash, 'base64'),
      line: row.line,
      cosignedAt: Number(row.cosigned_at),
    }));
  }

  /**
   * The largest tree size that at least `quorum` of `witnesses` cosigned, among the newest
   * NEWEST_ROWS cosignatures of theirs (an index read, whatever the table's size); undefined when none.
   */
  async newestSize(witnesses: readonly string[], quorum: number): Promise<number | undefined> {
    if (witnesses.length === 0) return undefined;
    const rows = await this.#db
      .selectFrom('witness_cosignatures')
      .select(['tree_size', 'witness'])
      .where('witness', 'in', witnesses)
      .orderBy('tree_size', 'desc')
      .limit(NEWEST_ROWS)
      .execute();
    const counts = new Map<number, number>();
    for (const row of rows) {
      const size = Number(row.tree_size);
      const count = (counts.get(size) ?? 0) + 1;
      if (count >= quorum) return size;
      counts.set(size, count);
    }
    return undefined;
  }

  /** Every witness's recorded health. */
  async health(): Promise<WitnessHealth[]> {
    const rows = await this.#db.selectFrom('witness_status').selectAll().execute();
    return rows.map((row) => ({
      witness: row.witness,
      cosignedSize: row.cosigned_size === null ? null : Number(row.cosigned_size),
      failures: Number(row.failures),
      lastSuccessAt: row.last_success_at === null ? null : Number(row.last_success_at),
      lastFailureAt: row.last_failure_at === null ? null : Number(row.last_failure_at),
      lastError: row.last_error,
    }));
  }

  /**
   * Records what a request to a witness came to: the size it said it holds (when it said one), and a
   * success or a failure (counted in a row, with its reason).
   */
  async record(
    witness: string,
    now: number,
    outcome: { cosignedSize?: number; error?: string },
  ): Promise<void> {
    const size = outcome.cosignedSize === undefined ? {} : { cosigned_size: outcome.cosignedSize };
    const result =
      outcome.error === undefined
        ? { failures: 0, last_success_at: now, last_error: null, ...size }
        : { last_failure_at: now, last_error: outcome.error, ...size };
    await this.#db
      .insertInto('witness_status')
      .values({
        witness,
        failures: outcome.error === undefined ? 0 : 1,
        last_success_at: null,
        last_failure_at: null,
        cosigned_size: null,
        ...result,
      })
      .onConflict((oc) =>
        oc.column('witness').doUpdateSet((eb) => ({
          ...result,
          ...(outcome.error === undefined ? {} : { failures: eb('witness_status.failures', '+', 1) }),
        })),
      )
      .execute();
  }
}
