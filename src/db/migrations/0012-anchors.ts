import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * Anchors (docs/verification.md, "Anchors"): checkpoints of the log vouched for by outside
 * time-stamping authorities and OpenTimestamps calendars. `anchors` holds each anchored checkpoint;
 * `anchor_tokens` the RFC 3161 tokens over it; `anchor_calendars` each calendar's OpenTimestamps reply
 * and, once Bitcoin confirms it, the calendar's upgrade. `anchor_endpoints` is each authority's and
 * calendar's health, shown by /api/status on every instance. `anchor_lease` (one row) names the one
 * instance that anchors while its lease runs.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('anchors')
    .addColumn('tree_size', 'bigint', (c) => c.primaryKey())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('checkpoint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('anchor_tokens')
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('gen_time', 'bigint', (c) => c.notNull())
    .addColumn('token', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('anchor_tokens_pk', ['tree_size', 'url'])
    .execute();
  await db.schema
    .createTable('anchor_calendars')
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    .addColumn('calendar', 'text', (c) => c.notNull())
    .addColumn('reply', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('bitcoin_height', 'integer')
    .addColumn('upgrade', 'text')
    .addColumn('checks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_check_at', 'bigint')
    .addColumn('submitted_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('anchor_calendars_pk', ['tree_size', 'calendar'])
    .execute();
  await sql`create index anchor_calendars_due on anchor_calendars (next_check_at) where status = 'pending'`.execute(
    db,
  );
  await db.schema
    .createTable('anchor_endpoints')
    .addColumn('url', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_success_at', 'bigint')
    .addColumn('last_failure_at', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('retry_at', 'bigint')
    .execute();
  await db.schema
    .createTable('anchor_lease')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('holder', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into anchor_lease (id, holder, expires_at) values (1, null, 0)`.execute(db);
}
