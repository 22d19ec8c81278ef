/** The throughput benchmark's report, and its Markdown table. */
import { formatWritePath, type WritePathResult } from './write-path.ts';

export interface BenchOptions {
  durationSeconds: number;
  connections: number;
  /** `sqlite` (a fresh file) or a postgres:// URL (a fresh schema is not made: use an empty database). */
  database: string;
  proofs: number;
  /**
   * Baseline-then-route pairs per route (default 1); the pair with the median ratio is reported, so one
   * disturbed run on a noisy machine does not decide the figure.
   */
  rounds?: number;
  /** Only the write path (bare POST, proof baseline, notarize, batches): the read routes are skipped. */
  writeOnly?: boolean;
  log?: (line: string) => void;
}

export interface RouteResult {
  route: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
  baselineRequestsPerSecond: number;
  ratio: number;
  /** Median round trip of a GET sent alone (no other load), in ms; undefined for POST routes. */
  aloneP50Ms: number | undefined;
}

export interface BenchReport {
  options: BenchOptions;
  results: RouteResult[];
  /** The write path against the proof baseline (see write-path.ts). */
  writePath: WritePathResult;
  startupMs: number;
  peakRssMb: number;
  machine: string;
}

export function formatReport(report: BenchReport): string {
  const lines = [
    `machine: ${report.machine}`,
    `options: ${report.options.durationSeconds} s per run, ${report.options.connections} connections, database ${report.options.database}, ${report.options.proofs} seeded proofs, ${report.options.rounds ?? 1} round(s) per route (median ratio)`,
    `startup to first 200 on /health: ${Math.round(report.startupMs)} ms; service peak RSS: ${report.peakRssMb.toFixed(0)} MB`,
    '',
    '| route | req/s | p50 ms | p99 ms | max ms | errors | non-2xx | baseline req/s | ratio | alone p50 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...report.results.map(
      (r) =>
        `| ${r.route} | ${Math.round(r.requestsPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.errors} | ${r.non2xx} | ${Math.round(r.baselineRequestsPerSecond)} | ${r.ratio.toFixed(2)} | ${r.aloneP50Ms === undefined ? '–' : r.aloneP50Ms.toFixed(2)} |`,
    ),
    '',
    ...formatWritePath(report.writePath),
  ];
  return lines.join('\n');
}
