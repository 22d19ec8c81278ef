import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * Every x402 payment authorization the service has taken, by what identifies it on chain (network,
 * payer, nonce): one authorization buys at most one proof, whatever a facilitator answers and however
 * many instances share the database. A row is written before settlement (`settling`) and becomes
 * `settled` in the transaction that stores the proof it paid for. The partial unique index lets one
 * payment at a time settle for an idempotency key, across instances; a claim whose authorization has
 * expired (it can no longer move money) is marked `expired` and frees its key.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('payment_authorizations')
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('payload_digest', 'text', (c) => c.notNull())
    .addColumn('idempotency_scope', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('valid_before', 'bigint', (c) => c.notNull())
    .addColumn('proof_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('payment_authorizations_pk', ['network', 'payer', 'nonce'])
    .execute();
  await sql`create unique index payment_authorizations_settling on payment_authorizations (idempotency_scope, idempotency_key) where state = 'settling'`.execute(
    db,
  );
}
