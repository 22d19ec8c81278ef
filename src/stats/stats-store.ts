import { sql } from 'kysely';
import type { Db } from '../db/index.ts';

export const DAY_MS = 86_400_000;

export interface ProofTotals {
  total: number;
  /** Proofs created on or after the day `sinceDay` (days since the epoch, UTC). */
  since: number;
  /** Epoch milliseconds of the newest proof; null when there is none. */
  latestAt: number | null;
}

/**
 * The aggregates behind the dashboard, status, trust and sitemap, read from the per-day counts that
 * `insertProofs` keeps (migration 0008): a few rows a day, whatever the number of proofs. Counting the
 * proofs table took about 250 ms a query at 1,000,000 proofs.
 */
export async function countProofs(db: Db, sinceDay: number): Promise<ProofTotals> {
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
}

/** How many proofs were created each way (`demo`, `x402`, `api_key`). */
export async function countByCreatedVia(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('proof_counts')
    .select(['created_via', sql<number>`sum(count)`.as('count')])
    .groupBy('created_via')
    .execute();
  return new Map(rows.map((row) => [row.created_via, Number(row.count)]));
}

/** Proofs per UTC day from the day `sinceDay` on, keyed by the day's number since the epoch. */
export async function countByDay(db: Db, sinceDay: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('proof_counts')
    .select(['day', sql<number>`sum(count)`.as('count')])
    .where('day', '>=', sinceDay)
    .groupBy('day')
    .execute();
  return new Map(rows.map((row) => [Number(row.day), Number(row.count)]));
}

export interface ProofHeadline {
  id: string;
  label: string;
  content_hash: string;
  created_at: number;
  created_via: string;
}

/** The newest proofs, only the columns a listing of links needs. */
export async function newestProofs(db: Db, limit: number): Promise<ProofHeadline[]> {
  return db
    .selectFrom('proofs')
    .select(['id', 'label', 'content_hash', 'created_at', 'created_via'])
    .orderBy('seq', 'desc')
    .limit(limit)
    .execute();
}
