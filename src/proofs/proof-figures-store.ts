import { CompiledQuery, sql } from 'kysely';
import type { Insertable } from 'kysely';
import type { Db, DatabaseHandle } from '../db/index.ts';
import type { ProofsTable } from '../db/schema.ts';
import type { PaidVia, ProofFigures } from '../stats/stats-service.ts';

const DAY_MS = 86_400_000;
/** SQLite: the day counts to add, as one JSON parameter of [day, created_via, count] triples. */
const ADD_TO_COUNTS = CompiledQuery.raw(
  'insert into proof_counts (day, created_via, count) select value ->> 0, value ->> 1, value ->> 2 from json_each(?) where true on conflict (day, created_via) do update set count = count + excluded.count',
);

/** What the per-day counts read of a new proof's row: its day and the way it was created. */
type CountedRow = Pick<Insertable<ProofsTable>, 'created_at' | 'created_via'>;

/**
 * Adds newly inserted rows to the per-day counts (migration 0008), in the caller's transaction. The
 * counts are updated in one order (day, then way), so two PostgreSQL transactions that touch the same
 * counts wait for each other instead of deadlocking.
 */
export async function addToCounts(
  db: Db,
  engine: DatabaseHandle['engine'],
  inserted: CountedRow[],
): Promise<void> {
  const counts = new Map<string, [number, string, number]>();
  for (const row of inserted) {
    const day = Math.floor(Number(row.created_at) / DAY_MS);
    const key = `${String(day).padStart(12, '0')} ${row.created_via}`;
    const entry = counts.get(key) ?? [day, row.created_via, 0];
    entry[2]++;
    counts.set(key, entry);
  }
  if (counts.size === 0) return;
  const triples = [...counts.keys()].sort().map((key) => counts.get(key) as [number, string, number]);
  if (engine === 'sqlite') {
    await db.executeQuery({ ...ADD_TO_COUNTS, parameters: [JSON.stringify(triples)] });
    return;
  }
  await db
    .insertInto('proof_counts')
    .values(triples.map(([day, via, count]) => ({ day, created_via: via, count })))
    .onConflict((oc) =>
      oc.columns(['day', 'created_via']).doUpdateSet((eb) => ({
        count: eb('proof_counts.count', '+', eb.ref('excluded.count')),
      })),
    )
    .execute();
}

/**
 * The figures behind the dashboard, status, trust and sitemap (`ProofFigures`, wired in context.ts).
 * Counts come from the per-day counts `addToCounts` keeps: a few rows a day, whatever the number of
 * proofs (counting the proofs table took about 250 ms a query at 1,000,000 proofs).
 */
export function proofFigures(db: Db): ProofFigures {
  return {
    async totals(sinceDay) {
      const [counts, newest] = await Promise.all([
        db
          .selectFrom('proof_counts')
          .select([
            sql<number | null>`sum(count)`.as('total'),
            sql<number | null>`sum(case when day >= ${sinceDay} then count else 0 end)`.as('since'),
          ])
          .executeTakeFirstOrThrow(),
        // The newest row by insertion: its time is the newest but for proofs committed in the same moment.
        db.selectFrom('proofs').select('created_at').orderBy('seq', 'desc').limit(1).executeTakeFirst(),
      ]);
      return {
        total: Number(counts.total ?? 0),
        since: Number(counts.since ?? 0),
        latestAt: newest === undefined ? null : Number(newest.created_at),
      };
    },

    async byPaidVia() {
      const rows = await db
        .selectFrom('proof_counts')
        .select(['created_via', sql<number>`sum(count)`.as('count')])
        .groupBy('created_via')
        .execute();
      return new Map(rows.map((row) => [row.created_via, Number(row.count)]));
    },

    async byDay(sinceDay) {
      const rows = await db
        .selectFrom('proof_counts')
        .select(['day', sql<number>`sum(count)`.as('count')])
        .where('day', '>=', sinceDay)
        .groupBy('day')
        .execute();
      return new Map(rows.map((row) => [Number(row.day), Number(row.count)]));
    },

    async newest(limit) {
      const rows = await db
        .selectFrom('proofs')
        .select(['id', 'label', 'content_hash', 'created_at', 'created_via'])
        .orderBy('seq', 'desc')
        .limit(limit)
        .execute();
      return rows.map((row) => ({
        id: row.id,
        label: row.label,
        contentHash: row.content_hash,
        timestamp: new Date(Number(row.created_at)).toISOString(),
        paidVia: row.created_via as PaidVia,
      }));
    },
  };
}
