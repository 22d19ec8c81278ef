/**
 * The figures of the hostile-load benchmark: the measuring client's latencies, the goals, and what the
 * attacker saw per route.
 */
import { percentile } from '../lib/stats.ts';
import type { Answer } from './http.ts';
import type { McpFigures } from './mcp.ts';

const GOALS = { healthP99Ms: 50, healthMaxMs: 250, getP99Ratio: 2, mcpSessions: 1000, mcpRssGrowthMiB: 64 };

export interface LatencyStats {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers by status code; `error` for requests that got none. */
  statuses: Record<string, number>;
}

interface ClientFigures {
  route: string;
  withoutAttack: LatencyStats;
  underAttack: LatencyStats;
  /** p99 under attack / p99 without attack. */
  p99Ratio: number;
}

interface GoalResult {
  goal: string;
  measured: string;
  pass: boolean;
}

interface AttackRouteStats {
  route: string;
  sent: number;
  statuses: Record<string, number>;
  /** Over the requests the rate limit let through (not 429); null when none was. */
  servedP50Ms: number | null;
  servedMaxMs: number | null;
  /** One more such request sent alone after the phases, on the idle (and warm) service. */
  alone: { ms: number; status: number };
}

export interface HostileReport {
  date: string;
  machine: string;
  options: { proofs: number; durationSeconds: number; database: string; windowMs: number | undefined };
  rateLimit: { max: number; windowMs: number };
  startupMs: number;
  /** The log's size when the phases began. */
  treeSize: number;
  client: { health: ClientFigures; get: ClientFigures };
  /** The hostile-peers phase: `/health` against the phase without attack, `.ots` downloads, notarizations. */
  peers: {
    health: ClientFigures;
    ots: LatencyStats;
    notarized: LatencyStats;
    /** Requests the calendar and the authority saw in the phase (the authority's: in the whole run). */
    calendarRequests: number;
    authorityRequests: number;
  };
  /** The hostile-MCP-clients phase (hostile/mcp.ts), its `/health` against the phase without attack. */
  mcp: Omit<McpFigures, 'health'> & { health: ClientFigures };
  goals: GoalResult[];
  attacker: { sent: number; served: number; limited: number; routes: AttackRouteStats[] };
}

/** What the attacker saw per route, in the order of `ATTACKS`: let-through times in ms. */
export interface AttackerResult {
  routes: { route: string; sent: number; statuses: Record<string, number>; served: number[] }[];
}

export const round = (ms: number): number => Math.round(ms * 100) / 100;

/** Counts an answer by its status code; `error` for a request that got none. */
export function countStatus(statuses: Record<string, number>, answer: Answer): void {
  const key = answer.status === 0 ? 'error' : String(answer.status);
  statuses[key] = (statuses[key] ?? 0) + 1;
}

export class Recorder {
  readonly times: number[] = [];
  readonly statuses: Record<string, number> = {};

  add(answer: Answer): void {
    // A request without an answer counts with the time it waited.
    this.times.push(answer.ms);
    countStatus(this.statuses, answer);
  }

  stats(): LatencyStats {
    const sorted = [...this.times].sort((a, b) => a - b);
    return {
      samples: sorted.length,
      p50Ms: round(percentile(sorted, 50)),
      p99Ms: round(percentile(sorted, 99)),
      maxMs: round(sorted.at(-1) ?? Number.NaN),
      statuses: this.statuses,
    };
  }
}

export function clientFigures(route: string, without: LatencyStats, under: LatencyStats): ClientFigures {
  return { route, withoutAttack: without, underAttack: under, p99Ratio: round(under.p99Ms / without.p99Ms) };
}

/** The attacker's figures per route, with the time of each kind of request sent `alone`. */
export function attackerFigures(
  seen: AttackerResult,
  alone: { ms: number; status: number }[],
): HostileReport['attacker'] {
  const routes: AttackRouteStats[] = seen.routes.map((route, i) => {
    const served = [...route.served].sort((a, b) => a - b);
    return {
      route: route.route,
      sent: route.sent,
      statuses: route.statuses,
      servedP50Ms: served.length === 0 ? null : round(percentile(served, 50)),
      servedMaxMs: served.length === 0 ? null : round(served.at(-1) ?? NaN),
      alone: alone[i] ?? { ms: NaN, status: 0 },
    };
  });
  const sent = routes.reduce((sum, route) => sum + route.sent, 0);
  const limited = routes.reduce((sum, route) => sum + (route.statuses['429'] ?? 0), 0);
  const errors = routes.reduce((sum, route) => sum + (route.statuses.error ?? 0), 0);
  return { sent, served: sent - limited - errors, limited, routes };
}

/** The goals under attack, with hostile peers and hostile MCP clients, each measured and marked pass or fail. */
export function goalResults(
  health: ClientFigures,
  read: ClientFigures,
  peers: ClientFigures,
  mcp: HostileReport['mcp'],
): GoalResult[] {
  const messages = mcp.messages.reduce((sum, message) => sum + message.sent, 0);
  const refused = mcp.messages.reduce((sum, message) => sum + message.asExpected, 0);
  const sessions = mcp.ownSessions + mcp.flood.opened;
  const { before, after } = mcp.rssMiB;
  const growth = before === null || after === null ? null : round(after - before);
  return [
    {
      goal: `under attack, /health p99 ≤ ${GOALS.healthP99Ms} ms`,
      measured: `${health.underAttack.p99Ms} ms`,
      pass: health.underAttack.p99Ms <= GOALS.healthP99Ms,
    },
    {
      goal: `under attack, /health max ≤ ${GOALS.healthMaxMs} ms`,
      measured: `${health.underAttack.maxMs} ms`,
      pass: health.underAttack.maxMs <= GOALS.healthMaxMs,
    },
    {
      goal: `under attack, GET /api/proofs/{id} p99 ≤ ${GOALS.getP99Ratio} × without attack`,
      measured: `${read.p99Ratio} × (${read.underAttack.p99Ms} against ${read.withoutAttack.p99Ms} ms)`,
      pass: read.p99Ratio <= GOALS.getP99Ratio,
    },
    {
      goal: `with hostile peers, /health p99 ≤ ${GOALS.healthP99Ms} ms`,
      measured: `${peers.underAttack.p99Ms} ms (${peers.p99Ratio} × without attack)`,
      pass: peers.underAttack.p99Ms <= GOALS.healthP99Ms,
    },
    {
      goal: `with hostile peers, /health max ≤ ${GOALS.healthMaxMs} ms`,
      measured: `${peers.underAttack.maxMs} ms`,
      pass: peers.underAttack.maxMs <= GOALS.healthMaxMs,
    },
    {
      goal: `with hostile MCP clients, /health p99 ≤ ${GOALS.healthP99Ms} ms`,
      measured: `${mcp.health.underAttack.p99Ms} ms (${mcp.health.p99Ratio} × without attack)`,
      pass: mcp.health.underAttack.p99Ms <= GOALS.healthP99Ms,
    },
    {
      goal: `with hostile MCP clients, /health max ≤ ${GOALS.healthMaxMs} ms`,
      measured: `${mcp.health.underAttack.maxMs} ms`,
      pass: mcp.health.underAttack.maxMs <= GOALS.healthMaxMs,
    },
    {
      goal: 'with hostile MCP clients, every message refused with its status and code',
      measured: `${refused} of ${messages}`,
      pass: messages > 0 && refused === messages && mcp.messages.every((message) => message.sent > 0),
    },
    {
      goal: `MCP session flood: at most ${GOALS.mcpSessions} sessions, then 503`,
      measured: `${sessions} sessions, then ${mcp.flood.refused} × 503; ${mcp.flood.unexpected.length} other answers`,
      pass: sessions <= GOALS.mcpSessions && mcp.flood.refused > 0 && mcp.flood.unexpected.length === 0,
    },
    {
      goal: `with hostile MCP clients, resident memory grows ≤ ${GOALS.mcpRssGrowthMiB} MiB`,
      measured:
        growth === null
          ? 'not measured'
          : `${growth} MiB (${before} → ${after} MiB, peak ${mcp.rssMiB.peak})`,
      pass: growth !== null && growth <= GOALS.mcpRssGrowthMiB,
    },
  ];
}
