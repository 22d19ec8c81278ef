import type { Db } from '../db/index.ts';
import type { Clock } from '../platform/clock.ts';
import * as store from './stats-store.ts';
import { DAY_MS } from './stats-store.ts';

/** The ways a proof is created and paid for (the proofs table's created_via). */
export const CREATED_VIA = ['demo', 'x402', 'api_key'] as const;
export type CreatedVia = (typeof CREATED_VIA)[number];

/** How many UTC days the dashboard's activity chart covers, today included. */
export const ACTIVITY_DAYS = 14;
/** How many proofs the dashboard lists as recent activity. */
export const RECENT_COUNT = 10;

export interface ProofHeadline {
  id: string;
  label: string;
  contentHash: string;
  timestamp: string;
  createdVia: string;
}

export interface DashboardSummary {
  generatedAt: string;
  proofs: {
    total: number;
    /** Since 00:00 UTC today. */
    today: number;
    /** The last seven UTC days, today included. */
    last7Days: number;
    byCreatedVia: Record<CreatedVia, number>;
    latestAt: string | null;
  };
  /** One entry per UTC day, oldest first, today last; days without proofs count 0. */
  daily: { date: string; count: number }[];
  recent: ProofHeadline[];
}

export interface StatsServiceDeps {
  db: Db;
  clock: Clock;
}

/** Read-only figures about the proofs, for the public dashboard, status and trust documents. */
export class StatsService {
  readonly #deps: StatsServiceDeps;

  constructor(deps: StatsServiceDeps) {
    this.#deps = deps;
  }

  async summary(): Promise<DashboardSummary> {
    const { db, clock } = this.#deps;
    const now = clock.now();
    const today = Math.floor(now / DAY_MS);
    const firstDay = today - (ACTIVITY_DAYS - 1);
    const [totals, byVia, byDay, recent] = await Promise.all([
      store.countProofs(db, today),
      store.countByCreatedVia(db),
      store.countByDay(db, firstDay),
      store.newestProofs(db, RECENT_COUNT),
    ]);
    const daily = Array.from({ length: ACTIVITY_DAYS }, (_, i) => ({
      date: new Date((firstDay + i) * DAY_MS).toISOString().slice(0, 10),
      count: byDay.get(firstDay + i) ?? 0,
    }));
    return {
      generatedAt: new Date(now).toISOString(),
      proofs: {
        total: totals.total,
        today: totals.since,
        last7Days: daily.slice(-7).reduce((sum, day) => sum + day.count, 0),
        byCreatedVia: Object.fromEntries(CREATED_VIA.map((via) => [via, byVia.get(via) ?? 0])) as Record<
          CreatedVia,
          number
        >,
        latestAt: isoOrNull(totals.latestAt),
      },
      daily,
      recent: recent.map(toHeadline),
    };
  }

  /** The number of proofs and the time of the newest. */
  async totals(): Promise<{ total: number; latestAt: string | null }> {
    const totals = await store.countProofs(this.#deps.db, Math.floor(this.#deps.clock.now() / DAY_MS));
    return { total: totals.total, latestAt: isoOrNull(totals.latestAt) };
  }

  /** The newest proofs, newest first (sitemap, home page). */
  async newest(limit: number): Promise<ProofHeadline[]> {
    return (await store.newestProofs(this.#deps.db, limit)).map(toHeadline);
  }
}

function toHeadline(row: store.ProofHeadline): ProofHeadline {
  return {
    id: row.id,
    label: row.label,
    contentHash: row.content_hash,
    timestamp: new Date(Number(row.created_at)).toISOString(),
    createdVia: row.created_via,
  };
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
