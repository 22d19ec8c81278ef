import type { Clock } from '../platform/clock.ts';

const DAY_MS = 86_400_000;

/**
 * How a proof was paid for: `demo` (free, in demo mode), `x402` (a payment settled through x402) or
 * `api_key` (an account's API key, billed out of band). Stored in the column `created_via`; the
 * dashboard document calls it `createdVia`.
 */
export const PAID_VIA = ['demo', 'x402', 'api_key'] as const;
export type PaidVia = (typeof PAID_VIA)[number];

/** How many UTC days the dashboard's activity chart covers, today included. */
const ACTIVITY_DAYS = 14;
/** How many proofs the dashboard lists as recent activity. */
const RECENT_COUNT = 10;

export interface ProofHeadline {
  id: string;
  label: string;
  contentHash: string;
  timestamp: string;
  paidVia: PaidVia;
}

export interface DashboardSummary {
  generatedAt: string;
  proofs: {
    total: number;
    /** Since 00:00 UTC today. */
    today: number;
    /** The last seven UTC days, today included. */
    last7Days: number;
    /** Named as the published dashboard document names it. */
    byCreatedVia: Record<PaidVia, number>;
    latestAt: string | null;
  };
  /** One entry per UTC day, oldest first, today last; days without proofs count 0. */
  daily: { date: string; count: number }[];
  recent: ProofHeadline[];
}

interface ProofTotals {
  total: number;
  /** Proofs created on or after the day `sinceDay` (days since the epoch, UTC). */
  since: number;
  /** Epoch milliseconds of the newest proof; null when there is none. */
  latestAt: number | null;
}

/** The figures about the proofs, read by their store (wired in context.ts); days count from the epoch, UTC. */
export interface ProofFigures {
  totals(sinceDay: number): Promise<ProofTotals>;
  /** How many proofs were paid for each way. */
  byPaidVia(): Promise<Map<string, number>>;
  /** Proofs per UTC day from the day `sinceDay` on, keyed by the day's number. */
  byDay(sinceDay: number): Promise<Map<number, number>>;
  /** The newest proofs, newest first, with only what a listing of links needs. */
  newest(limit: number): Promise<ProofHeadline[]>;
}

interface StatsServiceDeps {
  figures: ProofFigures;
  clock: Clock;
}

/** Read-only figures about the proofs, for the public dashboard, status and trust documents. */
export class StatsService {
  readonly #deps: StatsServiceDeps;

  constructor(deps: StatsServiceDeps) {
    this.#deps = deps;
  }

  async summary(): Promise<DashboardSummary> {
    const { figures, clock } = this.#deps;
    const now = clock.now();
    const today = Math.floor(now / DAY_MS);
    const firstDay = today - (ACTIVITY_DAYS - 1);
    const [totals, byVia, byDay, recent] = await Promise.all([
      figures.totals(today),
      figures.byPaidVia(),
      figures.byDay(firstDay),
      figures.newest(RECENT_COUNT),
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
        byCreatedVia: Object.fromEntries(PAID_VIA.map((via) => [via, byVia.get(via) ?? 0])) as Record<
          PaidVia,
          number
        >,
        latestAt: isoOrNull(totals.latestAt),
      },
      daily,
      recent,
    };
  }

  /** The number of proofs and the time of the newest. */
  async totals(): Promise<{ total: number; latestAt: string | null }> {
    const totals = await this.#deps.figures.totals(Math.floor(this.#deps.clock.now() / DAY_MS));
    return { total: totals.total, latestAt: isoOrNull(totals.latestAt) };
  }

  /** The newest proofs, newest first (sitemap, home page). */
  async newest(limit: number): Promise<ProofHeadline[]> {
    return this.#deps.figures.newest(limit);
  }
}

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
