/** The hostile-load report as Markdown tables. */
import { ALONE_ADDRESS, ATTACKER_ADDRESS, CLIENT_ADDRESS } from './http.ts';
import type { HostileReport } from './figures.ts';
import { PEERS_ADDRESS } from './peers.ts';

const ms = (value: number | null) => (value === null || Number.isNaN(value) ? '–' : value.toFixed(1));
const statusList = (statuses: Record<string, number>) =>
  Object.entries(statuses)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, count]) => `${status}: ${count}`)
    .join(', ');

export function formatHostileReport(report: HostileReport): string {
  const { options, rateLimit } = report;
  const client = [report.client.health, report.client.get];
  const lines = [
    `machine: ${report.machine}; ${report.date}`,
    `options: ${options.proofs} seeded proofs, database ${options.database}, ${options.durationSeconds} s per phase; rate limit ${rateLimit.max} requests per ${rateLimit.windowMs / 1000} s per address${options.windowMs === undefined ? " (the service's default)" : ''}`,
    `startup to first 200 on /health: ${report.startupMs} ms; log size ${report.treeSize}`,
    '',
    `### Measuring client (${CLIENT_ADDRESS})`,
    '',
    '| request | phase | samples | p50 ms | p99 ms | max ms | p99 ratio | statuses |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...client.flatMap((figures) => [
      `| ${figures.route} | without attack | ${figures.withoutAttack.samples} | ${ms(figures.withoutAttack.p50Ms)} | ${ms(figures.withoutAttack.p99Ms)} | ${ms(figures.withoutAttack.maxMs)} | | ${statusList(figures.withoutAttack.statuses)} |`,
      `| ${figures.route} | under attack | ${figures.underAttack.samples} | ${ms(figures.underAttack.p50Ms)} | ${ms(figures.underAttack.p99Ms)} | ${ms(figures.underAttack.maxMs)} | ${figures.p99Ratio.toFixed(2)} | ${statusList(figures.underAttack.statuses)} |`,
    ]),
    `| ${report.peers.health.route} | with hostile peers | ${report.peers.health.underAttack.samples} | ${ms(report.peers.health.underAttack.p50Ms)} | ${ms(report.peers.health.underAttack.p99Ms)} | ${ms(report.peers.health.underAttack.maxMs)} | ${report.peers.health.p99Ratio.toFixed(2)} | ${statusList(report.peers.health.underAttack.statuses)} |`,
    `| GET /api/proofs/{id}/proof.ots | with hostile peers | ${report.peers.ots.samples} | ${ms(report.peers.ots.p50Ms)} | ${ms(report.peers.ots.p99Ms)} | ${ms(report.peers.ots.maxMs)} | | ${statusList(report.peers.ots.statuses)} |`,
    `| POST /api/proof/notarize (${PEERS_ADDRESS}) | with hostile peers | ${report.peers.notarized.samples} | ${ms(report.peers.notarized.p50Ms)} | ${ms(report.peers.notarized.p99Ms)} | ${ms(report.peers.notarized.maxMs)} | | ${statusList(report.peers.notarized.statuses)} |`,
    `| ${report.mcp.health.route} | with hostile MCP clients | ${report.mcp.health.underAttack.samples} | ${ms(report.mcp.health.underAttack.p50Ms)} | ${ms(report.mcp.health.underAttack.p99Ms)} | ${ms(report.mcp.health.underAttack.maxMs)} | ${report.mcp.health.p99Ratio.toFixed(2)} | ${statusList(report.mcp.health.underAttack.statuses)} |`,
    '',
    `Hostile peers: the calendar answered ${report.peers.calendarRequests} requests in the phase; the authority ${report.peers.authorityRequests} in the run.`,
    '',
    ...mcpSection(report.mcp),
    '### Goals',
    '',
    '| goal | measured | result |',
    '|---|---|---|',
    ...report.goals.map((goal) => `| ${goal.goal} | ${goal.measured} | ${goal.pass ? 'pass' : '**FAIL**'} |`),
    '',
    `### Attacker (${ATTACKER_ADDRESS})`,
    '',
    `${report.attacker.sent} requests sent, ${report.attacker.served} let through, ${report.attacker.limited} answered 429. ` +
      `p50 and max: over the requests let through, as the attacker saw them (a burst's requests wait for each other); ` +
      `alone: one more request of the kind sent alone after the phases (from ${ALONE_ADDRESS}), and its status.`,
    '',
    '| route | sent | statuses | p50 ms | max ms | alone ms |',
    '|---|---:|---|---:|---:|---:|',
    ...report.attacker.routes.map(
      (route) =>
        `| ${route.route} | ${route.sent} | ${statusList(route.statuses)} | ${ms(route.servedP50Ms)} | ${ms(route.servedMaxMs)} | ${ms(route.alone.ms)}${route.alone.status === 200 ? '' : ` (${route.alone.status})`} |`,
    ),
  ];
  const failed = report.goals.filter((goal) => !goal.pass);
  lines.push(
    '',
    failed.length === 0
      ? 'All goals met.'
      : `FAILED: ${failed.length} of ${report.goals.length} goals: ${failed.map((goal) => goal.goal).join('; ')}`,
  );
  return lines.join('\n');
}

const code = (value: string | number) => (typeof value === 'number' ? `JSON-RPC ${value}` : value);

/** The hostile MCP clients: each kind of message and what it got, the session flood, the memory. */
function mcpSection(mcp: HostileReport['mcp']): string[] {
  const { flood, rssMiB } = mcp;
  return [
    '### Hostile MCP clients (POST /mcp)',
    '',
    '| message | expected | sent | statuses | as expected | p50 ms | max ms |',
    '|---|---|---:|---|---:|---:|---:|',
    ...mcp.messages.map(
      (message) =>
        `| ${message.kind} | ${message.expected.status} ${code(message.expected.code)} | ${message.sent} | ${statusList(message.statuses)} | ${message.asExpected} | ${ms(message.p50Ms)} | ${ms(message.maxMs)} |`,
    ),
    '',
    `Session flood (initialize, never ended; ${mcp.ownSessions} sessions of the clients above open): ` +
      `${flood.sent} calls from ${flood.addresses} addresses in ${ms(flood.ms)} ms; ${flood.opened} sessions opened, ` +
      `${flood.capped} refused with 429 rate_limited at their address's own cap of sessions; ` +
      `${flood.refused} refused with 503 service_unavailable and Retry-After; statuses ${statusList(flood.statuses)}.`,
    `Resident memory of the service: ${rssMiB.before ?? '–'} MiB before, ${rssMiB.peak ?? '–'} MiB at most during, ${rssMiB.after ?? '–'} MiB after.`,
    ...[...mcp.messages.flatMap((message) => message.unexpected), ...flood.unexpected].map(
      (answer) => `Unexpected answer: ${answer.replaceAll('|', '\\|')}`,
    ),
    '',
  ];
}
