/**
 * CPU profiles of the write path under load: the service (`--target service`, the default) or the proof
 * baseline (`--target baseline`) runs with `node --cpu-prof` while autocannon sends new proofs
 * (`--route notarize`, or `--route batch` for batches of 100) for `--duration` seconds; then the
 * profiles of its threads are summarised by self time (profile-summary.ts) and left in `--out`.
 *   node scripts/bench/profile.ts --duration 10 --connections 64 --out /tmp/profiles
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { answers } from '../../test/process.ts';
import { benchEnvironment, freePort, startProcess, startService } from './lib/service.ts';
import { summarise, type SelfTime } from './profile-summary.ts';
import { run } from './run/measure.ts';
import { BATCH_SIZE, newItem } from './run/write-path.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'service' },
    route: { type: 'string', default: 'notarize' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '64' },
    out: { type: 'string', default: 'profiles' },
    top: { type: 'string', default: '25' },
  },
});
const out = path.resolve(values.out);
mkdirSync(out, { recursive: true });
const flags = ['--cpu-prof', `--cpu-prof-dir=${out}`];
const directory = benchEnvironment('hashproof-profile-', 'sqlite');
const port = String(await freePort());
const url = `http://127.0.0.1:${port}`;
let child: ChildProcess;
if (values.target === 'baseline') {
  child = startProcess(
    'scripts/bench/proof-baseline-server.ts',
    {
      PORT: port,
      DATABASE_FILE: path.join(directory.dataDir, 'baseline.db'),
      SIGNING_KEYS_DIR: path.join(directory.dataDir, 'keys'),
    },
    flags,
  );
  await answers(`${url}/health`, child);
} else {
  child = (await startService({ ...directory.env, RATE_LIMIT_MAX: '0', PORT: port }, flags)).process;
}
const before = new Set(readdirSync(out));
try {
  const batch = values.route === 'batch';
  const result = await run({
    url: `${url}/api/proof/${batch ? 'batch' : 'notarize'}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: Number(values.connections),
    duration: Number(values.duration),
    requests: [
      {
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify(
            batch
              ? { items: Array.from({ length: BATCH_SIZE }, () => newItem('profile')) }
              : newItem('profile'),
          ),
        }),
      },
    ],
  });
  console.log(
    `${values.target} ${values.route}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}`,
  );
} finally {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  directory.remove();
}
const top = Number(values.top);
const line = (entry: SelfTime) =>
  `${(entry.share * 100).toFixed(1).padStart(5)} %  ${entry.ms.toFixed(0).padStart(6)} ms  ${entry.name}`;
for (const file of readdirSync(out).filter((name) => !before.has(name) && name.endsWith('.cpuprofile'))) {
  const { functions, files, totalMs } = summarise(JSON.parse(readFileSync(path.join(out, file), 'utf8')));
  console.log(`\n${file}: ${totalMs.toFixed(0)} ms sampled\nby file:`);
  for (const entry of files.slice(0, top)) console.log(line(entry));
  console.log('by function:');
  for (const entry of functions.slice(0, top)) console.log(line(entry));
}
