import type { Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * The RFC 3161 token of each proof, kept as its TSA signature only: every other byte of the token
 * follows from the proof (hash, timestamp, serial number from the id) and the TSA certificate.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema.alterTable('proofs').addColumn('tst_signature', 'text').execute();
  await db.schema.alterTable('proofs').addColumn('tst_key_id', 'text').execute();
}
