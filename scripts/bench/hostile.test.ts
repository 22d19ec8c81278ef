import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runHostileBenchmark } from './hostile.ts';
import { ATTACKS } from './hostile/attacks.ts';
import { MCP_MESSAGES } from './hostile/mcp.ts';
import { formatHostileReport } from './hostile/report.ts';

// A smoke run: keeps the harness working. Its figures are not worth reading (tiny database, 3 s phases),
// so no goal is asserted; only that every part of the report is there and the attacker was limited.
test('the hostile-load benchmark measures its phases, the attacker hits the rate limit, MCP clients are refused', async () => {
  const report = await runHostileBenchmark({
    proofs: 200,
    durationSeconds: 3,
    database: 'sqlite',
    windowMs: 1000,
  });
  assert.deepEqual(report.rateLimit, { max: 60, windowMs: 1000 });
  assert.equal(report.treeSize >= 200, true);
  for (const figures of [report.client.health, report.client.get]) {
    for (const phase of [figures.withoutAttack, figures.underAttack]) {
      assert.ok(phase.samples > 0, figures.route);
      assert.ok(phase.p50Ms > 0 && phase.p50Ms <= phase.p99Ms && phase.p99Ms <= phase.maxMs, figures.route);
      assert.ok((phase.statuses['200'] ?? 0) > 0, figures.route);
    }
    assert.ok(Number.isFinite(figures.p99Ratio) && figures.p99Ratio > 0);
  }
  // /health is exempt, and the client's reads stay under its limit.
  assert.deepEqual(Object.keys(report.client.health.underAttack.statuses), ['200']);
  assert.equal(report.client.get.withoutAttack.statuses['429'], undefined);
  assert.equal(report.goals.length, 10);
  // The hostile peers' phase: /health and the .ots downloads answered, and the calendar asked.
  assert.deepEqual(Object.keys(report.peers.health.underAttack.statuses), ['200']);
  assert.ok((report.peers.ots.statuses['200'] ?? 0) > 0);
  assert.ok(report.peers.calendarRequests > 0);
  assert.ok((report.peers.notarized.statuses['200'] ?? 0) > 0);
  for (const goal of report.goals) assert.equal(typeof goal.pass, 'boolean');

  // The hostile MCP clients: every message got the refusal of its kind (its status and code), none a
  // 500 or a success; the flood opened sessions up to the cap (its own and the clients' make 1,000),
  // then was refused with 503; /health answered throughout; the service's memory was read.
  const { mcp } = report;
  assert.deepEqual(Object.keys(mcp.health.underAttack.statuses), ['200']);
  assert.equal(mcp.messages.length, MCP_MESSAGES.length);
  for (const message of mcp.messages) {
    assert.ok(message.sent > 0, message.kind);
    assert.equal(message.asExpected, message.sent, `${message.kind}: ${message.unexpected.join('; ')}`);
    assert.deepEqual(Object.keys(message.statuses), [String(message.expected.status)], message.kind);
  }
  assert.deepEqual(
    mcp.messages.map((message) => [message.kind, message.expected.status, message.expected.code]).slice(0, 2),
    [
      ['oversized (256 KiB, twice the body limit)', 413, 'payload_too_large'],
      ['tools/call of an unknown tool', 200, -32602],
    ],
  );
  assert.equal(mcp.ownSessions + mcp.flood.opened, 1000);
  assert.ok(mcp.flood.refused > 0);
  assert.deepEqual(mcp.flood.unexpected, []);
  assert.deepEqual(Object.keys(mcp.flood.statuses).sort(), ['200', '429', '503']);
  // Each address stops at its own cap of 20 sessions: the flood needs 50 addresses for 1,000.
  assert.equal(mcp.flood.statuses['429'], mcp.flood.capped);
  assert.ok(mcp.flood.capped >= 1000 / 20 - 1, String(mcp.flood.capped));
  assert.equal(mcp.flood.statuses['503'], mcp.flood.refused);
  for (const value of [mcp.rssMiB.before, mcp.rssMiB.peak, mcp.rssMiB.after])
    assert.ok(value !== null && value > 0);
  const refusals = report.goals.find((goal) => goal.goal.includes('every message refused'));
  assert.equal(refusals?.pass, true);
  assert.equal(report.goals.find((goal) => goal.goal.startsWith('MCP session flood'))?.pass, true);

  // The attacker went through the whole mix, was let through up to its allowance and limited beyond it.
  assert.equal(report.attacker.routes.length, ATTACKS.length);
  assert.ok(report.attacker.limited > 0);
  assert.ok(report.attacker.served >= report.rateLimit.max);
  for (const route of report.attacker.routes) {
    assert.ok(route.sent > 0, route.route);
    assert.ok(route.servedP50Ms !== null && route.servedP50Ms > 0, route.route);
    // Each kind of request is answered (a refusal of the invalid time-stamp query is a 200 too).
    assert.equal(route.alone.status, 200, route.route);
  }

  const text = formatHostileReport(report);
  assert.match(text, /\| GET \/health \| without attack \| \d+ \|/);
  assert.match(text, /\| GET \/api\/proofs\/\{id\} \| under attack \| \d+ \|/);
  assert.match(text, /\| under attack, \/health p99 ≤ 50 ms \| [\d.]+ ms \| (pass|\*\*FAIL\*\*) \|/);
  assert.match(text, /\| with hostile peers, \/health max ≤ 250 ms \| [\d.]+ ms \| (pass|\*\*FAIL\*\*) \|/);
  assert.match(text, /\| GET \/api\/proofs\/\{id\}\/proof.ots \| with hostile peers \| \d+ \|/);
  assert.match(text, /\| GET \/api\/dashboard\/summary \| \d+ \| .*429: \d+/);
  assert.match(text, /\| GET \/health \| with hostile MCP clients \| \d+ \|/);
  assert.match(text, /\| tools\/call of an unknown tool \| 200 JSON-RPC -32602 \| \d+ \| 200: \d+ \| \d+ \|/);
  assert.match(text, /Session flood .*refused with 503 service_unavailable/);
});
