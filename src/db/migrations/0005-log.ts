import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * The transparency log: each proof's leaf index, every complete Merkle subtree hash (from which roots,
 * proofs and tiles are computed), every signed checkpoint, and the log head that one sequencer at a
 * time advances by compare-and-swap.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema.alterTable('proofs').addColumn('leaf_index', 'bigint').execute();
  // One proof per leaf, one leaf per proof (NULL until sequenced; NULLs do not collide).
  await db.schema.createIndex('proofs_leaf_index').on('proofs').column('leaf_index').unique().execute();
  // The sequencer's queue: proofs not yet in the log, in insertion order.
  await sql`create index proofs_unsequenced on proofs (seq) where leaf_index is null`.execute(db);

  await db.schema
    .createTable('log_nodes')
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('log_nodes_pk', ['level', 'idx'])
    .execute();

  await db.schema
    .createTable('log_checkpoints')
    .addColumn('tree_size', 'bigint', (c) => c.primaryKey())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('checkpoint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('log_head')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('tree_size', 'bigint', (c) => c.notNull())
    // The log's name, fixed by the first instance that starts: every checkpoint is signed under it.
    .addColumn('origin', 'text')
    .execute();
  await sql`insert into log_head (id, tree_size) values (1, 0)`.execute(db);
}
