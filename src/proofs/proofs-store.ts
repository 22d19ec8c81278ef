import { sql, type CompiledQuery, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { ProofsTable } from '../db/schema.ts';
import { isPlausibleId } from '../core/ids.ts';

export type ProofRow = Selectable<ProofsTable>;
export type NewProofRow = Insertable<ProofsTable>;

export interface ProofFilter {
  /** How to match part of a label: through the FTS5 trigram table (SQLite) or LIKE on the column (pg_trgm). */
  labelSearch?: 'fts' | 'like';
  q?: { text: string; folded: string; hash: string | undefined };
  contentHash?: string;
  metadataHash?: string;
  accountId?: string;
  idempotencyKey?: string;
  /** Only rows inserted before this sequence number (the cursor). */
  beforeSeq?: number;
}

/**
 * The two lookups on every request, compiled once per database handle (Kysely builds and compiles a
 * query on each call otherwise); only the parameters change.
 */
const lookups = new WeakMap<Db, { byId: CompiledQuery<ProofRow>; byKey: CompiledQuery<ProofRow> }>();

function lookupsOf(db: Db) {
  let compiled = lookups.get(db);
  if (compiled === undefined) {
    compiled = {
      byId: db.selectFrom('proofs').selectAll().where('id', '=', '').compile(),
      byKey: db
        .selectFrom('proofs')
        .selectAll()
        .where('idempotency_scope', '=', '')
        .where('idempotency_key', '=', '')
        .compile(),
    };
    lookups.set(db, compiled);
  }
  return compiled;
}

export async function findById(db: Db, id: string): Promise<ProofRow | undefined> {
  if (!isPlausibleId(id)) return undefined;
  const query = lookupsOf(db).byId;
  return (await db.executeQuery<ProofRow>({ ...query, parameters: [id] })).rows[0];
}

export async function findByIdempotencyKey(
  db: Db,
  scope: string,
  key: string,
): Promise<ProofRow | undefined> {
  const query = lookupsOf(db).byKey;
  return (await db.executeQuery<ProofRow>({ ...query, parameters: [scope, key] })).rows[0];
}

/**
 * Inserts the rows in one statement (one commit). A row whose (scope, key) is already taken, by an
 * earlier proof or by an earlier row of the same batch, is skipped. Returns the ids actually inserted.
 * On SQLite (`labelIndex: 'fts'`) the new labels then enter the FTS5 trigram index in one statement:
 * call it inside a transaction, so the proofs and their index entries commit together.
 */
export async function insertProofs(
  db: Db,
  rows: NewProofRow[],
  labelIndex: 'fts' | 'none',
): Promise<Set<string>> {
  const inserted = await db
    .insertInto('proofs')
    .values(rows)
    .onConflict((oc) => oc.columns(['idempotency_scope', 'idempotency_key']).doNothing())
    .returning(['id', 'seq'])
    .execute();
  if (labelIndex === 'fts' && inserted.length > 0) {
    // One writer at a time on SQLite: the rows between the first and last new seq are this batch's.
    let [low, high] = [Infinity, -Infinity];
    for (const { seq } of inserted) [low, high] = [Math.min(low, seq), Math.max(high, seq)];
    await sql`insert into proofs_label_fts (rowid, label_folded) select seq, label_folded from proofs where seq between ${low} and ${high}`.execute(
      db,
    );
  }
  return new Set(inserted.map((row) => row.id));
}

/** Newest first; `limit + 1` rows are read so the caller can tell whether another page exists. */
export async function listProofs(db: Db, filter: ProofFilter, limit: number): Promise<ProofRow[]> {
  let query = db
    .selectFrom('proofs')
    .selectAll()
    .orderBy('seq', 'desc')
    .limit(limit + 1);
  if (filter.contentHash !== undefined) query = query.where('content_hash', '=', filter.contentHash);
  if (filter.metadataHash !== undefined) query = query.where('metadata_hash', '=', filter.metadataHash);
  if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId);
  if (filter.idempotencyKey !== undefined) query = query.where('idempotency_key', '=', filter.idempotencyKey);
  if (filter.beforeSeq !== undefined) query = query.where('seq', '<', filter.beforeSeq);
  const q = filter.q;
  if (q !== undefined) {
    // FTS5 answers GLOB from its trigram index (LIKE … ESCAPE it would scan); both sides are case-folded.
    const label =
      filter.labelSearch === 'fts'
        ? sql<boolean>`seq in (select rowid from proofs_label_fts where label_folded glob ${'*' + q.folded.replace(/[*?[]/g, (c) => `[${c}]`) + '*'})`
        : sql<boolean>`label_folded like ${'%' + q.folded.replace(/[\\%_]/g, (c) => '\\' + c) + '%'} escape '\\'`;
    query = query.where((eb) => {
      const terms = [eb('id', '=', q.text), eb('account_id', '=', q.text), label];
      if (q.hash !== undefined) terms.push(eb('content_hash', '=', q.hash), eb('metadata_hash', '=', q.hash));
      return eb.or(terms);
    });
  }
  return query.execute();
}
