import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runBenchmark } from './run.ts';
import { medianByRatio } from './run/measure.ts';
import { formatReport } from './run/report.ts';
import { BARE_READ } from './run/routes.ts';
import { WRITE_RUNS } from './run/write-path.ts';

// A smoke run: keeps the harness working. It measures nothing worth reading (the runs are tiny).
test('the benchmark harness runs every route against the service and the bare baseline', async () => {
  const report = await runBenchmark({ durationSeconds: 1, connections: 4, database: 'sqlite', proofs: 200 });
  assert.equal(report.results.length, 10);
  for (const result of report.results) {
    assert.ok(result.requestsPerSecond > 0, result.route);
    assert.ok(result.baselineRequestsPerSecond > 0, result.route);
    assert.equal(result.errors, 0, result.route);
    assert.equal(result.non2xx, 0, result.route);
    assert.ok(result.ratio > 0 && Number.isFinite(result.ratio));
    // Reads of one URL of the service are also timed alone; the POST routes, the reads of many proofs
    // and the bare server's copy of an answer are not.
    if (result.route.startsWith('GET') && !result.route.endsWith('proofs)'))
      assert.ok(result.aloneP50Ms !== undefined && result.aloneP50Ms > 0);
    else assert.equal(result.aloneP50Ms, undefined);
  }
  // The write path: the bare POST route, the proof baseline, notarize and batches of 100 new items.
  const runs = report.writePath.runs;
  assert.deepEqual(
    runs.map((run) => run.run),
    [WRITE_RUNS.bare, WRITE_RUNS.baseline, WRITE_RUNS.notarize, WRITE_RUNS.batch],
  );
  const batch = report.writePath.batchRatio;
  assert.ok(batch !== undefined && batch > 0 && Number.isFinite(batch));
  for (const run of runs) {
    assert.ok(run.proofsPerSecond > 0, run.run);
    assert.equal(run.errors, 0, run.run);
    assert.equal(run.non2xx, 0, run.run);
  }
  assert.ok(report.writePath.notarizeRatio > 0 && Number.isFinite(report.writePath.notarizeRatio));
  assert.ok(report.peakRssMb > 0);
  assert.ok(report.startupMs > 0);
  const table = formatReport(report);
  assert.match(table, /notarize \/ proof baseline: \d+\.\d\d/);
  assert.match(table, /\| POST \/api\/proof\/notarize \(new keys\) \| \d+ \|/);
  // All 200 seeded proofs are read by the routes over many proofs (each answered 200, checked above).
  assert.match(table, /\| GET \/api\/verify\/proofs\/\{id\} \(200 proofs\) \| \d+ \|/);
  assert.match(table, /startup to first 200 on \/health: \d+ ms/);
  // The ceiling of a read: the bare server sends the very bytes the service answered.
  assert.ok(report.results.some((result) => result.route === BARE_READ));
});

test('with several rounds, the pair with the median ratio is reported', () => {
  const pair = (ratio: number) => ({ ratio, name: `r${ratio}` });
  assert.equal(medianByRatio([pair(0.3), pair(0.1), pair(0.2)]).name, 'r0.2');
  assert.equal(medianByRatio([pair(0.4), pair(0.1), pair(0.3), pair(0.2)]).name, 'r0.2');
  assert.equal(medianByRatio([pair(0.5)]).name, 'r0.5');
  assert.throws(() => medianByRatio([]));
});
