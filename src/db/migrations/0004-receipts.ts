import type { Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/** The public-key receipt of each proof (an Ed25519 signature) and the id of the key that made it. */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema.alterTable('proofs').addColumn('receipt', 'text').execute();
  await db.schema.alterTable('proofs').addColumn('receipt_key_id', 'text').execute();
}
