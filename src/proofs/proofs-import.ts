import type { DatabaseHandle } from '../db/index.ts';
import { insertProofs, type NewProofRow } from './proofs-store.ts';

export type { NewProofRow } from './proofs-store.ts';

/** Rows per insert statement: well under PostgreSQL's limit of 65,535 parameters a statement. */
const ROWS_PER_STATEMENT = 500;

/**
 * Stores proofs signed outside the service (the benchmarks' seed fills a database this way) in one
 * transaction, with their label index entries and per-day counts, exactly as the service's own write
 * path stores them. Not for the service itself: a proof it makes goes through `ProofsService`.
 */
export async function importProofs(database: DatabaseHandle, rows: NewProofRow[]): Promise<void> {
  await database.db.transaction().execute(async (trx) => {
    for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT)
      await insertProofs(trx, database.engine, rows.slice(i, i + ROWS_PER_STATEMENT));
  });
}
