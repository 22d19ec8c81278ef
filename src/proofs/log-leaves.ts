import { CompiledQuery, sql } from 'kysely';
import { signingMessage } from '../core/proof-signature.ts';
import type { Db, DatabaseHandle } from '../db/index.ts';
import type { LeafSource } from '../log/log-service.ts';
import { signedFields } from './proof-row.ts';
import type { ProofRow } from './proofs-store.ts';

/**
 * SQLite: every leaf index of a step as one JSON parameter of [seq, leaf index] pairs, so the statement
 * is the same for any batch (docs/decisions.md, "One statement for any batch size").
 */
const SET_LEAF_INDEXES = CompiledQuery.raw(
  'update proofs set leaf_index = j.value ->> 1 from json_each(?) as j where proofs.seq = j.value ->> 0',
);

/** The leaf of a proof: the UTF-8 bytes of its signing message (docs/verification.md). */
function leafOf(
  row: Pick<ProofRow, 'id' | 'created_at' | 'content_hash' | 'metadata_hash' | 'label'>,
): Buffer {
  return Buffer.from(signingMessage(signedFields(row)), 'utf8');
}

async function assignSqlite(trx: Db, entries: { seq: number; leafIndex: number }[]): Promise<void> {
  const pairs = entries.map(({ seq, leafIndex }) => [seq, leafIndex]);
  await trx.executeQuery({ ...SET_LEAF_INDEXES, parameters: [JSON.stringify(pairs)] });
}

/** PostgreSQL: 500 proofs a statement, a `values` list joined to the table by sequence number. */
async function assignPostgres(trx: Db, entries: { seq: number; leafIndex: number }[]): Promise<void> {
  for (let i = 0; i < entries.length; i += 500) {
    const list = sql.join(
      entries
        .slice(i, i + 500)
        .map(({ seq, leafIndex }) => sql`(cast(${seq} as bigint), cast(${leafIndex} as bigint))`),
    );
    await sql`with v(seq, idx) as (values ${list}) update proofs set leaf_index = v.idx from v where proofs.seq = v.seq`.execute(
      trx,
    );
  }
}

/** The proofs as the log's entries: the proofs' side of the transparency log (`LeafSource`). */
export function proofLeafSource(db: Db, engine: DatabaseHandle['engine']): LeafSource {
  return {
    async notIntegrated(trx, limit) {
      const rows = await trx
        .selectFrom('proofs')
        .select(['seq', 'id', 'created_at', 'content_hash', 'metadata_hash', 'label'])
        .where('leaf_index', 'is', null)
        .orderBy('seq')
        .limit(limit)
        .execute();
      return rows.map((row) => ({ seq: row.seq, leaf: leafOf(row) }));
    },

    assignLeafIndexes: engine === 'sqlite' ? assignSqlite : assignPostgres,

    async backlog() {
      const [counted, oldest] = await Promise.all([
        db
          .selectFrom('proofs')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('leaf_index', 'is', null)
          .executeTakeFirstOrThrow(),
        db
          .selectFrom('proofs')
          .select('created_at')
          .where('leaf_index', 'is', null)
          .orderBy('seq')
          .limit(1)
          .executeTakeFirst(),
      ]);
      return { count: Number(counted.n), oldestCreatedAt: oldest ? Number(oldest.created_at) : null };
    },

    async leaves(first, count) {
      const rows = await db
        .selectFrom('proofs')
        .select(['id', 'created_at', 'content_hash', 'metadata_hash', 'label'])
        .where('leaf_index', '>=', first)
        .where('leaf_index', '<', first + count)
        .orderBy('leaf_index')
        .execute();
      return rows.map(leafOf);
    },
  };
}
