import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * Witnesses (docs/witnesses.md): cosignatures of the log's checkpoints by the configured witnesses
 * (C2SP tlog-witness, tlog-cosignature). `witness_cosignatures` holds each cosignature line checked
 * against its witness's key, once per witness and tree size, with the root it cosigns;
 * `witness_status` each witness's last known tree size and health, shown by /api/status on every
 * instance; `witness_lease` (one row) names the one instance that asks the witnesses while its lease
 * runs.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('witness_cosignatures')
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('witness', 'text', (c) => c.notNull())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('line', 'text', (c) => c.notNull())
    .addColumn('cosigned_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('witness_cosignatures_pk', ['tree_size', 'witness'])
    .execute();
  await db.schema
    .createTable('witness_status')
    .addColumn('witness', 'text', (c) => c.primaryKey())
    .addColumn('cosigned_size', 'bigint')
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_success_at', 'bigint')
    .addColumn('last_failure_at', 'bigint')
    .addColumn('last_error', 'text')
    .execute();
  await db.schema
    .createTable('witness_lease')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('holder', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into witness_lease (id, holder, expires_at) values (1, null, 0)`.execute(db);
}
