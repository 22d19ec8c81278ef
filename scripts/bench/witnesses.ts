/**
 * Witnessing under full notarize load:
 *   npm run bench:witnesses -- --duration 20 --connections 32
 * Runs the service (embedded default, demo mode, rate limit off) three times in one sitting, with
 * `connections` clients creating proofs as fast as it answers: without witnesses (the baseline); asking
 * two `hashproof witness` processes (WITNESS_INTERVAL_MS at its default); and asking one witness that
 * holds every request open (a stalled peer). Reports the throughput of each and its ratio to the
 * baseline of the same sitting, and for the two witnesses how far their cosignatures trail: from the end
 * of the load until the largest checkpoint both cosigned holds every proof.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { formatVerifierKey } from '../../src/core/signed-note.ts';
import { Keyring } from '../../src/keys/keyring.ts';
import type { ChildProcess } from 'node:child_process';
import { printed, start } from '../../test/process.ts';
import { startTestWitness } from '../../test/tlog-witness.ts';
import { notarizeLoad } from './lib/notarize-load.ts';
import { benchEnvironment, freePort, startService } from './lib/service.ts';

/** The services' public address, so the log's origin (and the key the witnesses trust) is known first. */
const PUBLIC_BASE_URL = 'http://bench.test';
const ORIGIN = 'bench.test/log';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '32' },
  },
});
const seconds = Number(values.duration);
const connections = Number(values.connections);

/** A fresh service whose log key exists before it starts; `witnesses(vkey)` names its witnesses. */
async function phase(
  name: string,
  witnesses: (logVkey: string) => Promise<{ vkey: string; url: string }[]>,
): Promise<{ proofsPerSecond: number; errors: number; url: string; stop: () => void }> {
  const { env, remove } = benchEnvironment(`hashproof-witness-bench-${name}-`, 'sqlite');
  const keyring = Keyring.open(env.SIGNING_KEYS_DIR);
  const configured = await witnesses(formatVerifierKey(ORIGIN, keyring.logKey.publicKey));
  const port = await freePort();
  const service = await startService({
    ...env,
    PUBLIC_BASE_URL,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    ...(configured.length === 0
      ? {}
      : {
          WITNESSES: configured.map((w) => `${w.vkey}@${w.url}`).join(','),
          WITNESS_ALLOW_PRIVATE_URLS: 'true',
        }),
  });
  const { created, errors } = await notarizeLoad(service.url, {
    seconds,
    connections,
    sample: Number.MAX_SAFE_INTEGER,
    label: `witness bench ${name}`,
    onSampled: () => {},
  });
  return {
    proofsPerSecond: created / seconds,
    errors,
    url: service.url,
    stop: () => {
      service.process.kill('SIGTERM');
      remove();
    },
  };
}

const sizeOf = (note: string) => Number(note.split('\n')[1]);

/** `hashproof witness` as a user runs it, on a port of its own: its process, address and verifier key. */
async function startWitness(args: string[]): Promise<{ child: ChildProcess; url: string; vkey: string }> {
  const cli = path.join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
  const child = start(process.execPath, [cli, 'witness', '--listen', '127.0.0.1:0', ...args]);
  const output = await printed(child, 'hashproof witness is listening on', 120_000);
  const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
  const vkey = output.split('\n').find((line) => /^\S+\+[0-9a-f]{8}\+B\S+$/.test(line));
  if (url === undefined || vkey === undefined) throw new Error(`hashproof witness: ${output}`);
  return { child, url, vkey };
}

const running: ChildProcess[] = [];
const scratch = mkdtempSync(path.join(os.tmpdir(), 'hashproof-witness-bench-'));
try {
  const none = await phase('none', () => Promise.resolve([]));
  none.stop();

  const two = await phase('two', async (logVkey) => {
    const started = [];
    for (const n of [1, 2]) {
      const dir = (sub: string) => path.join(scratch, `w${n}-${sub}`);
      const witness = await startWitness([
        '--keys-dir',
        dir('keys'),
        '--state-dir',
        dir('state'),
        '--log',
        logVkey,
      ]);
      running.push(witness.child);
      started.push({ vkey: witness.vkey, url: witness.url });
    }
    return started;
  });
  // How far the cosignatures trail the log once the load stops.
  const logSize = sizeOf(await (await fetch(`${two.url}/log/checkpoint`)).text());
  const stoppedAt = performance.now();
  let trailMs: number | undefined;
  while (performance.now() - stoppedAt < 60_000) {
    const res = await fetch(`${two.url}/api/log/cosigned-checkpoint?witnesses=2`);
    if (res.status === 200 && sizeOf(await res.text()) >= logSize) {
      trailMs = performance.now() - stoppedAt;
      break;
    }
    await res.arrayBuffer().catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  two.stop();

  let stalled: Awaited<ReturnType<typeof startTestWitness>> | undefined;
  const held = await phase('stalled', async (logVkey) => {
    stalled = await startTestWitness(logVkey, 'bench.test/stalled');
    stalled.mode = 'hold';
    return [{ vkey: stalled.vkey, url: stalled.url }];
  });
  const heldRequests = stalled?.requests.length ?? 0;
  held.stop();
  await stalled?.close();

  const line = (label: string, p: { proofsPerSecond: number; errors: number }) =>
    `${label}${Math.round(p.proofsPerSecond)} proofs/s (errors ${p.errors}), ` +
    `${(p.proofsPerSecond / none.proofsPerSecond).toFixed(3)} × without`;
  console.log(`notarize, ${connections} connections, ${seconds} s each, one sitting:`);
  console.log(line('  without witnesses:            ', none));
  console.log(line('  two hashproof witnesses:      ', two));
  console.log(line('  one witness holding requests: ', held));
  console.log(
    `two witnesses: the checkpoint both cosigned held all ${logSize} proofs ` +
      (trailMs === undefined ? 'not within 60 s' : `${Math.round(trailMs)} ms after the load stopped`),
  );
  console.log(`the stalled witness was sent ${heldRequests} request(s) in the phase (one open at a time)`);
} finally {
  for (const child of running) child.kill('SIGTERM');
  rmSync(scratch, { recursive: true, force: true });
}
