/**
 * Throughput of the service's main routes, each against a bare Fastify server that parses the same
 * JSON body and answers a constant (the baseline), on a freshly seeded database:
 *   npm run bench -- --duration 10 --connections 64 --proofs 10000 [--database postgres://…] [--rounds 3]
 *   npm run bench -- --write-only     # the write path alone: bare POST, proof baseline, notarize, batches
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { answers } from '../../test/process.ts';
import { describeMachine, peakRssMb } from './lib/machine.ts';
import { benchEnvironment, freePort, startProcess, startService, waitForLogSize } from './lib/service.ts';
import { measureRoutes } from './run/measure.ts';
import { formatReport, type BenchOptions, type BenchReport } from './run/report.ts';
import { benchRoutes, prepareProof } from './run/routes.ts';
import { hasBatchRoute, measureWritePath } from './run/write-path.ts';
import { seed } from './seed.ts';

export async function runBenchmark(options: BenchOptions): Promise<BenchReport> {
  const log = options.log ?? (() => {});
  const directory = benchEnvironment('hashproof-bench-', options.database);
  const env = { ...directory.env, RATE_LIMIT_MAX: '0' };
  const children: ChildProcess[] = [];
  try {
    log(`seeding ${options.proofs} proofs`);
    const seededIds = await seed({ ...process.env, ...env }, options.proofs);

    const [servicePort, barePort, baselinePort] = [await freePort(), await freePort(), await freePort()];
    const bare = `http://127.0.0.1:${barePort}`;
    const proofBaseline = `http://127.0.0.1:${baselinePort}`;
    const running = await startService({ ...env, PORT: String(servicePort) });
    children.push(running.process);
    const service = running.url;
    // The seeded proofs enter the transparency log first, so its sequencer is idle during the runs.
    await waitForLogSize(service, options.proofs);
    const bareServer = startProcess('scripts/bench/bare-server.ts', { PORT: String(barePort) });
    children.push(bareServer);
    await answers(`${bare}/api/proof/notarize`, bareServer, {
      init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
    });

    const baselineServer = startProcess('scripts/bench/proof-baseline-server.ts', {
      PORT: String(baselinePort),
      DATABASE_FILE: path.join(directory.dataDir, 'baseline.db'),
      SIGNING_KEYS_DIR: path.join(directory.dataDir, 'baseline-keys'),
    });
    children.push(baselineServer);
    await answers(`${proofBaseline}/health`, baselineServer);

    const { proofId, replayBody } = await prepareProof(service, bare);
    const { routes, baseline } = benchRoutes({
      service,
      bare,
      proofId,
      replayBody,
      seededIds,
      proofs: options.proofs,
    });
    const rounds = Math.max(1, options.rounds ?? 1);
    const writePath = await measureWritePath(
      { bare, baseline: proofBaseline, service, batch: await hasBatchRoute(service) },
      { connections: options.connections, durationSeconds: options.durationSeconds, rounds, log },
    );
    const results = options.writeOnly
      ? []
      : await measureRoutes(routes, baseline, {
          service,
          connections: options.connections,
          durationSeconds: options.durationSeconds,
          rounds,
          log,
        });
    return {
      options: { ...options, rounds },
      results,
      writePath,
      startupMs: running.startupMs,
      peakRssMb: peakRssMb(running.process.pid ?? 0),
      machine: describeMachine(os.cpus().length),
    };
  } finally {
    for (const child of children) child.kill('SIGTERM');
    directory.remove();
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '64' },
      database: { type: 'string', default: 'sqlite' },
      proofs: { type: 'string', default: '10000' },
      rounds: { type: 'string', default: '1' },
      'write-only': { type: 'boolean', default: false },
    },
  });
  const report = await runBenchmark({
    durationSeconds: Number(values.duration),
    connections: Number(values.connections),
    database: values.database,
    proofs: Number(values.proofs),
    rounds: Number(values.rounds),
    writeOnly: values['write-only'],
    log: (line) => console.error(line),
  });
  console.log(formatReport(report));
}
