import { CompiledQuery, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { ProofsTable } from '../db/schema.ts';
import { isPlausibleId } from '../core/ids.ts';
import { addToCounts } from './proof-figures-store.ts';

type Engine = 'sqlite' | 'postgres';
export type ProofRow = Selectable<ProofsTable>;
export type NewProofRow = Insertable<ProofsTable>;

export interface ProofFilter {
  q?: { text: string; folded: string; hash: string | undefined };
  contentHash?: string;
  metadataHash?: string;
  accountId?: string;
  idempotencyKey?: string;
  /** Only rows inserted before this sequence number (the cursor). */
  beforeSeq?: number;
  /** Only rows from this sequence number on (the low end of a search window, `listProofs`). */
  atLeastSeq?: number;
}

/** A label part shorter than this cannot be answered from the trigram index (three characters a term). */
const TRIGRAM = 3;

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

/** The stored rows of these proofs, in no particular order (an unknown id has none). */
export async function findByIds(db: Db, engine: Engine, ids: string[]): Promise<ProofRow[]> {
  if (ids.length === 0) return [];
  // One statement for any number of ids (one prepared statement), written as SQL like `listProofs`.
  const query =
    engine === 'sqlite'
      ? CompiledQuery.raw('select * from proofs where id in (select value from json_each(?))', [
          JSON.stringify(ids),
        ])
      : CompiledQuery.raw('select * from proofs where id = any($1)', [ids]);
  return (await db.executeQuery<ProofRow>(query)).rows;
}

export async function findByIdempotencyKey(
  db: Db,
  scope: string,
  key: string,
): Promise<ProofRow | undefined> {
  const query = lookupsOf(db).byKey;
  return (await db.executeQuery<ProofRow>({ ...query, parameters: [scope, key] })).rows[0];
}

/** The stored proofs of these idempotency keys in one scope (a batch's look-up), in no particular order. */
export async function findByIdempotencyKeys(
  db: Db,
  engine: Engine,
  scope: string,
  keys: string[],
): Promise<ProofRow[]> {
  if (keys.length === 0) return [];
  const query =
    engine === 'sqlite'
      ? CompiledQuery.raw(
          'select * from proofs where idempotency_scope = ? and idempotency_key in (select value from json_each(?))',
          [scope, JSON.stringify(keys)],
        )
      : CompiledQuery.raw('select * from proofs where idempotency_scope = $1 and idempotency_key = any($2)', [
          scope,
          keys,
        ]);
  return (await db.executeQuery<ProofRow>(query)).rows;
}

/** Every column a new proof's row sets (all but `seq`, which the database assigns). */
const PROOF_COLUMNS = [
  'id',
  'created_at',
  'content_hash',
  'label',
  'label_folded',
  'metadata_hash',
  'metadata_keys',
  'signature',
  'key_id',
  'idempotency_scope',
  'idempotency_key',
  'request_fingerprint',
  'account_id',
  'created_via',
  'payment_network',
  'payment_payer',
  'payment_transaction',
  'payment_amount',
  'receipt',
  'receipt_key_id',
  'leaf_index',
  'tst_signature',
  'tst_key_id',
  'tst_format',
] as const satisfies readonly (keyof NewProofRow)[];
// Adding a column to the table without adding it here fails the type check.
const everyColumn: Exclude<keyof NewProofRow, 'seq' | (typeof PROOF_COLUMNS)[number]> extends never
  ? true
  : false = true;
void everyColumn;

/**
 * SQLite: rows go in through multi-row statements of a few fixed sizes (a batch of 45 is one statement
 * of 32 rows, one of 8 and five of 1), so three statements are prepared once for any number of rows: a
 * statement per batch size would be prepared again for each new size and kept in the statement cache,
 * about 100 KB each. Bound values cost SQLite less than reading each column out of a JSON parameter
 * (25–35 against 50–80 µs a row). The rows go in the array's order, each statement's and the batch's.
 */
const INSERT_SIZES = [32, 8, 1] as const;
const INSERTS = INSERT_SIZES.map((size) => ({
  size,
  query: CompiledQuery.raw(
    `insert into proofs (${PROOF_COLUMNS.join(', ')}) values ${Array.from(
      { length: size },
      () => `(${PROOF_COLUMNS.map(() => '?').join(', ')})`,
    ).join(', ')} on conflict (idempotency_scope, idempotency_key) do nothing returning id, seq`,
  ),
}));

/** SQLite: inserts the rows in order, skipping those whose (scope, key) is taken; returns the new ones. */
async function insertRows(db: Db, rows: NewProofRow[]): Promise<{ id: string; seq: number }[]> {
  const inserted: { id: string; seq: number }[] = [];
  let next = 0;
  for (const { size, query } of INSERTS) {
    for (; rows.length - next >= size; next += size) {
      const parameters: unknown[] = [];
      for (const row of rows.slice(next, next + size))
        for (const column of PROOF_COLUMNS) parameters.push(row[column] ?? null);
      const { rows: added } = await db.executeQuery<{ id: string; seq: number }>({ ...query, parameters });
      for (const row of added) inserted.push(row);
    }
  }
  return inserted;
}
/** SQLite: the labels of new proofs enter the FTS5 trigram index (migration 0007). */
const INDEX_LABELS = CompiledQuery.raw(
  'insert into proofs_label_fts (rowid, label_folded) select seq, label_folded from proofs where seq between ? and ?',
);

/**
 * Inserts the rows in one statement (one commit). A row whose (scope, key) is already taken, by an
 * earlier proof or by an earlier row of the same batch, is skipped. Returns the ids actually inserted.
 * On SQLite the new labels then enter the FTS5 trigram index in one statement, and on both engines the
 * new proofs are added to the per-day counts: call it inside a transaction, so the proofs, their index
 * entries and the counts commit together.
 */
export async function insertProofs(db: Db, engine: Engine, rows: NewProofRow[]): Promise<Set<string>> {
  if (engine === 'postgres') {
    const inserted = await db
      .insertInto('proofs')
      .values(rows)
      .onConflict((oc) => oc.columns(['idempotency_scope', 'idempotency_key']).doNothing())
      .returning('id')
      .execute();
    return countInserted(db, engine, rows, inserted);
  }
  const inserted = await insertRows(db, rows);
  if (inserted.length > 0) {
    // One writer at a time on SQLite: the rows between the first and last new seq are this batch's.
    let [low, high] = [Infinity, -Infinity];
    for (const { seq } of inserted) [low, high] = [Math.min(low, seq), Math.max(high, seq)];
    await db.executeQuery({ ...INDEX_LABELS, parameters: [low, high] });
  }
  return countInserted(db, engine, rows, inserted);
}

/** Adds the rows actually inserted to the per-day counts; returns their ids. */
async function countInserted(
  db: Db,
  engine: Engine,
  rows: NewProofRow[],
  inserted: { id: string }[],
): Promise<Set<string>> {
  const ids = new Set(inserted.map((row) => row.id));
  await addToCounts(
    db,
    engine,
    rows.filter((row) => ids.has(row.id)),
  );
  return ids;
}

/**
 * The proofs that match, newest first, as their `seq` and id only (the caller reads the rows it does not
 * already hold, `findByIds`); `limit + 1` are read so the caller can tell whether another page exists.
 * Written as SQL from fixed pieces: Kysely took twice as long to build and compile this query as
 * SQLite took to answer it (60 against 30 µs for a search by content hash).
 *
 * Its cost is bounded by `limit` only where indexes are read newest first and stop at the page
 * (`isBoundedByLimit`). Anything else (short label text, two filters) may look at every proof, so the
 * caller bounds it with a window of sequence numbers (`beforeSeq`, `atLeastSeq`): see `isBoundedByLimit`.
 */
export async function listProofs(
  db: Db,
  engine: Engine,
  filter: ProofFilter,
  limit: number,
): Promise<{ seq: number; id: string }[]> {
  // SQLite numbers `?` by position: each piece is added to the text as its parameter is added here.
  const parameters: unknown[] = [];
  const param = (value: unknown): string => {
    parameters.push(value);
    return engine === 'sqlite' ? '?' : `$${parameters.length}`;
  };
  const where: string[] = [];
  if (filter.contentHash !== undefined) where.push(`content_hash = ${param(filter.contentHash)}`);
  if (filter.metadataHash !== undefined) where.push(`metadata_hash = ${param(filter.metadataHash)}`);
  if (filter.accountId !== undefined) where.push(`account_id = ${param(filter.accountId)}`);
  if (filter.idempotencyKey !== undefined) where.push(`idempotency_key = ${param(filter.idempotencyKey)}`);
  if (filter.beforeSeq !== undefined) where.push(`seq < ${param(filter.beforeSeq)}`);
  if (filter.atLeastSeq !== undefined) where.push(`seq >= ${param(filter.atLeastSeq)}`);
  const q = filter.q;
  if (q !== undefined) {
    const terms = [`id = ${param(q.text)}`, `account_id = ${param(q.text)}`];
    terms.push(labelTerm(engine, q.folded, filter, limit, param));
    if (q.hash !== undefined)
      terms.push(`content_hash = ${param(q.hash)}`, `metadata_hash = ${param(q.hash)}`);
    where.push(`(${terms.join(' or ')})`);
  }
  const text =
    'select seq, id from proofs' +
    (where.length > 0 ? ` where ${where.join(' and ')}` : '') +
    ` order by seq desc limit ${param(limit + 1)}`;
  return (await db.executeQuery<{ seq: number; id: string }>(CompiledQuery.raw(text, parameters))).rows;
}

/**
 * The condition "the folded label contains `folded`". SQLite, three characters or more: an FTS5 phrase
 * query on the trigram index (a phrase of trigrams is a substring), limited to the outer query's window
 * of sequence numbers, and to its page when the label is all the query asks (`isBoundedByLimit`). FTS5
 * answers a phrase newest first by reading its trigrams' lists lazily: at 1,000,000 proofs 0.2 ms for a
 * common word, about 10 ms to start below the oldest proofs. (GLOB on the same index gathered every
 * match before taking any: 150 ms for a common word, whatever the window.) Shorter text cannot use the
 * index: the window's labels are compared one by one, read from an index of (seq, label_folded). PostgreSQL: LIKE, answered by the pg_trgm index on
 * the column when the planner finds it cheaper than the window. Both sides are case-folded.
 */
function labelTerm(
  engine: Engine,
  folded: string,
  filter: ProofFilter,
  limit: number,
  param: (value: unknown) => string,
): string {
  if (engine === 'postgres')
    return `label_folded like ${param('%' + folded.replace(/[\\%_]/g, (c) => '\\' + c) + '%')} escape '\\'`;
  const range = (column: string) =>
    (filter.beforeSeq !== undefined ? ` and ${column} < ${param(filter.beforeSeq)}` : '') +
    (filter.atLeastSeq !== undefined ? ` and ${column} >= ${param(filter.atLeastSeq)}` : '');
  if (!usesTrigrams(folded)) {
    // The window's labels read from a narrow index rather than from the rows (migration 0010).
    const pattern = param('*' + folded.replace(/[*?[]/g, (c) => `[${c}]`) + '*');
    return `seq in (select seq from proofs indexed by proofs_seq_label where label_folded glob ${pattern}${range('seq')})`;
  }
  let text = `select rowid from proofs_label_fts where proofs_label_fts match ${param(`"${folded.replaceAll('"', '""')}"`)}`;
  text += range('rowid');
  if (isBoundedByLimit(filter, engine)) text += ` order by rowid desc limit ${param(limit + 1)}`;
  return `seq in (${text})`;
}

/** Whether the SQLite trigram index can find this label text (three characters or more). */
function usesTrigrams(folded: string): boolean {
  return [...folded].length >= TRIGRAM;
}

/**
 * Whether `listProofs` answers this filter by reading indexes newest first and stopping at the page, so
 * its cost is bounded by the page size whatever the data: at most one indexed column and no label text,
 * or (SQLite) label text of three characters or more and nothing else but the cursor.
 */
export function isBoundedByLimit(filter: ProofFilter, engine: Engine): boolean {
  const indexed = [filter.contentHash, filter.metadataHash, filter.accountId, filter.idempotencyKey];
  const columns = indexed.filter((value) => value !== undefined).length;
  if (filter.q === undefined) return columns <= 1;
  return engine === 'sqlite' && columns === 0 && usesTrigrams(filter.q.folded);
}

/** The highest sequence number given so far (0 for an empty table). */
export async function newestSeq(db: Db): Promise<number> {
  const row = await db
    .selectFrom('proofs')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .executeTakeFirst();
  return Number(row?.seq ?? 0);
}
