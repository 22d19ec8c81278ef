import type { Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * How each proof's RFC 3161 token writes its genTime (tsa/tsa.ts, `TokenTimeFormat`), so that the token
 * is rebuilt byte for byte from its stored signature. The proofs stored before were signed with the
 * proof's milliseconds (`millis`); new ones are written with `seconds`. The default is the old form, so
 * a proof written by an instance that does not know this column yet (during a rolling update on a
 * shared PostgreSQL) is marked as what that instance signed.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema
    .alterTable('proofs')
    .addColumn('tst_format', 'text', (c) => c.notNull().defaultTo('millis'))
    .execute();
}
