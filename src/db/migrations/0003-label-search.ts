import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * A trigram index on the folded label, so `q` finds part of a label without reading every proof:
 * SQLite FTS5 with the trigram tokenizer (kept in step by triggers), or pg_trgm on PostgreSQL.
 * Both answer `LIKE '%…%'` from the index for patterns of three characters or more.
 */
export async function up(db: Kysely<unknown>, { engine }: MigrationContext): Promise<void> {
  if (engine === 'sqlite') {
    await sql`create virtual table proofs_label_fts using fts5(label_folded, content='proofs', content_rowid='seq', tokenize='trigram')`.execute(
      db,
    );
    await sql`insert into proofs_label_fts(rowid, label_folded) select seq, label_folded from proofs`.execute(
      db,
    );
    await sql`create trigger proofs_label_fts_insert after insert on proofs begin
      insert into proofs_label_fts(rowid, label_folded) values (new.seq, new.label_folded); end`.execute(db);
    await sql`create trigger proofs_label_fts_delete after delete on proofs begin
      insert into proofs_label_fts(proofs_label_fts, rowid, label_folded) values ('delete', old.seq, old.label_folded); end`.execute(
      db,
    );
    await sql`create trigger proofs_label_fts_update after update of label_folded on proofs begin
      insert into proofs_label_fts(proofs_label_fts, rowid, label_folded) values ('delete', old.seq, old.label_folded);
      insert into proofs_label_fts(rowid, label_folded) values (new.seq, new.label_folded); end`.execute(db);
    return;
  }
  // Where the extension cannot be created (no privilege), label search still works, by scanning.
  // The extension goes to `public`, not to the service's schema: several schemas (tenants, tests) share it,
  // and dropping one schema must not take the extension, and every other schema's index, with it.
  await sql`savepoint label_search`.execute(db);
  try {
    await sql`create extension if not exists pg_trgm with schema public`.execute(db);
    const { rows } = await sql<{ schema: string }>`
      select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace
      where e.extname = 'pg_trgm'`.execute(db);
    const schema = rows[0]?.schema ?? 'public';
    await sql`create index proofs_label_trgm on proofs using gin (label_folded ${sql.id(schema, 'gin_trgm_ops')})`.execute(
      db,
    );
    await sql`release savepoint label_search`.execute(db);
  } catch {
    await sql`rollback to savepoint label_search`.execute(db);
  }
}
