import type { Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

export async function up(db: Kysely<unknown>, { engine }: MigrationContext): Promise<void> {
  await db.schema
    .createTable('proofs')
    .addColumn('seq', engine === 'postgres' ? 'bigserial' : 'integer', (c) =>
      engine === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('label_folded', 'text', (c) => c.notNull())
    .addColumn('metadata_hash', 'text', (c) => c.notNull())
    .addColumn('metadata_keys', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('idempotency_scope', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_fingerprint', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .addColumn('created_via', 'text', (c) => c.notNull())
    .addColumn('payment_network', 'text')
    .addColumn('payment_payer', 'text')
    .addColumn('payment_transaction', 'text')
    .addColumn('payment_amount', 'text')
    .execute();
  await db.schema
    .createIndex('proofs_idempotency')
    .on('proofs')
    .columns(['idempotency_scope', 'idempotency_key'])
    .unique()
    .execute();
  // Every search filter is an equality followed by "newest first", so each index ends with seq.
  for (const column of ['content_hash', 'metadata_hash', 'account_id', 'idempotency_key']) {
    await db.schema.createIndex(`proofs_${column}_seq`).on('proofs').columns([column, 'seq']).execute();
  }
}
