import { sql } from 'kysely';
import type { Db } from '../db/index.ts';

export const DAY_MS = 86_400_000;

export interface ProofTotals {
  total: number;
  /** Proofs created at or after `sinceMs`. */
  since: number;
  /** Epoch milliseconds of the newest proof; null when there is none. */
  latestAt: number | null;
}

/**
 * The aggregate queries behind the dashboard, status, trust and sitemap. They scan the proofs table
 * (there is no index on created_at); that is cheap at the sizes one SQLite file holds, and these
 * routes are rate limited like every other.
 */
export async function countProofs(db: Db, sinceMs: number): Promise<ProofTotals> {
  const row = await db
    .selectFrom('proofs')
    .select([
      sql<number>`count(*)`.as('total'),
      sql<number | null>`sum(case when created_at >= ${sinceMs} then 1 else 0 end)`.as('since'),
      sql<number | null>`max(created_at)`.as('latest_at'),
    ])
    .executeTakeFirstOrThrow();
  return {
    total: Number(row.total),
    since: Number(row.since ?? 0),
    latestAt: row.latest_at === null ? null : Number(row.latest_at),
  };
}

/** How many proofs were created each way (`demo`, `x402`, `api_key`). */
export async function countByCreatedVia(db: Db): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('proofs')
    .select(['created_via', sql<number>`count(*)`.as('count')])
    .groupBy('created_via')
    .execute();
  return new Map(rows.map((row) => [row.created_via, Number(row.count)]));
}

/** Proofs per UTC day since `sinceMs` (a day boundary), keyed by the day's number since the epoch. */
export async function countByDay(db: Db, sinceMs: number): Promise<Map<number, number>> {
  // A literal, not a parameter: a bound number may arrive as REAL and make the division fractional.
  const day = sql<number>`created_at / ${sql.lit(DAY_MS)}`;
  const rows = await db
    .selectFrom('proofs')
    .select([day.as('day'), sql<number>`count(*)`.as('count')])
    .where('created_at', '>=', sinceMs)
    .groupBy(day)
    .execute();
  return new Map(rows.map((row) => [Math.floor(Number(row.day)), Number(row.count)]));
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
