import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * How many proofs were made each UTC day, each way (`created_via`), kept up to date in the transaction
 * that inserts the proofs (`insertProofs`). The dashboard, status, trust and sitemap counted the proofs
 * table instead: three scans, about 900 ms at 1,000,000 proofs, on the thread that serves requests.
 * The counts start from the proofs already stored.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('proof_counts')
    .addColumn('day', 'bigint', (c) => c.notNull())
    .addColumn('created_via', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('proof_counts_pk', ['day', 'created_via'])
    .execute();
  // A literal divisor, not a parameter: a bound number may arrive as REAL and make the division fractional.
  await sql`insert into proof_counts (day, created_via, count)
    select created_at / 86400000, created_via, count(*) from proofs group by 1, 2`.execute(db);
}
