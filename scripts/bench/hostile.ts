/**
 * Hostile load: can one client that stays within the rate limit slow the service down for everyone else?
 *   npm run bench:hostile -- --proofs 1000000 --duration 60 [--json report.json]
 *
 * Seeds a fresh database, starts the service as a child process with its default rate limit (demo mode)
 * and waits until the seeded proofs are in the log. Then two phases of `--duration` seconds each:
 *
 * - without attack: a measuring client from 127.0.0.1 asks for `/health` every 50 ms (exempt from the
 *   limit) and reads a different seeded proof every 1.1 × (window / limit), which stays under its
 *   address's limit (one every 1.1 s by default); every latency is recorded;
 * - under attack: the same client, while an attacker from 127.0.0.2 (a worker thread) spends its whole
 *   allowance on the most expensive requests the public routes take (`ATTACKS`, a table): at the start of
 *   each window it sends the whole allowance at once, then keeps asking, one request every 20 ms, so
 *   that it uses every request the next window allows (the first one that gets through marks the new
 *   window; the rest of that window's allowance follows at once).
 *
 * - hostile peers (hostile/peers.ts): the service anchors with a hostile calendar (its replies built
 *   for hashing cost) and a hostile authority (dripping its answers), while a third address notarizes
 *   so that every anchoring pass meets them; the client asks `/health` every 50 ms and downloads the
 *   `.ots` file of a seeded proof at the pace of its reads.
 *
 * - hostile MCP clients (hostile/mcp.ts): from addresses of their own (127.0.1.x), each at the pace its
 *   limit allows, clients of `/mcp` send only what it must refuse (oversized, unknown tool, bad params,
 *   not JSON, a wrong JSON-RPC version, batches of garbage, unknown or missing sessions), while a flood
 *   of `initialize` calls from further addresses (127.0.2.x) opens sessions, never ending one, until the
 *   cap answers 503; the client asks `/health` every 50 ms, and the service's resident memory is read.
 *
 * Afterwards each kind of attack request is sent once more, alone, from 127.0.0.3 (its cost on the idle
 * service). Prints the client's latencies in the phases, the goals (under attack: `/health` p99 ≤ 50 ms
 * and max ≤ 250 ms; GET p99 ≤ 2 × its p99 without attack; with the hostile peers and with the hostile
 * MCP clients, `/health` p99 ≤ 50 ms and max ≤ 250 ms; every MCP message refused with its status and
 * code; at most 1,000 sessions, then 503; resident memory grown ≤ 64 MiB over the MCP phase) as pass or
 * fail, what the MCP clients got per kind of message, and what the attacker saw per route.
 * It measures; a failed goal is printed, and the exit status stays 0. The service listens on 127.0.0.1;
 * Linux accepts any 127.x source address on the loopback interface, so the two clients count as two
 * addresses. Every request goes to the loopback interface, and every loop ends by itself.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { within } from '../../test/wait.ts';
import { startAttacker } from './hostile/attacker.ts';
import { ATTACKS, get, type AttackContext } from './hostile/attacks.ts';
import {
  attackerFigures,
  clientFigures,
  goalResults,
  Recorder,
  round,
  type HostileReport,
} from './hostile/figures.ts';
import { ALONE_ADDRESS, CLIENT_ADDRESS, send, steady, type Target } from './hostile/http.ts';
import { mcpPhase } from './hostile/mcp.ts';
import { peersPhase, startPeers, waitForAnchor, type Peers } from './hostile/peers.ts';
import { formatHostileReport } from './hostile/report.ts';
import { describeMachine } from './lib/machine.ts';
import {
  benchEnvironment,
  freePort,
  startService,
  waitForLogSize,
  type RunningService,
} from './lib/service.ts';
import { seed } from './seed.ts';

/** The `n` of the requests timed alone: other proofs than the attacker's first few thousand requests. */
const ALONE_N = 5000;
const HEALTH_INTERVAL_MS = 50;
/** Reads of seeded proofs sent before the phases (not measured), so the first measured read is not cold. */
const WARM_UP_READS = 3;
/** The longest wait for the seeded proofs to enter the log. */
const LOG_WAIT_MS = 20 * 60_000;

export interface HostileOptions {
  proofs: number;
  durationSeconds: number;
  /** `sqlite` (a fresh file) or a postgres:// URL (an empty database). */
  database: string;
  /** RATE_LIMIT_WINDOW_MS for the service (short runs); the service's default when absent. */
  windowMs?: number;
  log?: (line: string) => void;
}

export async function runHostileBenchmark(options: HostileOptions): Promise<HostileReport> {
  const log = options.log ?? (() => {});
  const directory = benchEnvironment('hashproof-hostile-', options.database);
  const port = await freePort();
  const env = {
    ...directory.env,
    PORT: String(port),
    // Empty is unset: the service's default limit, whatever this shell's environment says.
    RATE_LIMIT_MAX: '',
    RATE_LIMIT_WINDOW_MS: options.windowMs === undefined ? '' : String(options.windowMs),
  };
  const { rateLimit } = loadConfig({ ...process.env, ...env });
  if (rateLimit.max === 0) throw new Error('the rate limit is off');
  let service: RunningService | undefined;
  let peers: Peers | undefined;
  const clientAgent = new http.Agent({ keepAlive: true });
  const client: Target = { port, localAddress: CLIENT_ADDRESS, agent: clientAgent };
  let attacker: Awaited<ReturnType<typeof startAttacker>> | undefined;
  try {
    log(`seeding ${options.proofs} proofs`);
    const ids = await seed({ ...process.env, ...env }, options.proofs, log);
    peers = await startPeers();
    service = await startService({ ...env, ...peers.env });
    const { startupMs } = service;
    log(`service up in ${Math.round(startupMs)} ms; waiting for ${options.proofs} proofs in the log`);
    await within(Promise.race([waitForLogSize(service.url, options.proofs), service.exited]), {
      what: 'the seeded proofs enter the log',
      timeoutMs: LOG_WAIT_MS,
    });

    // The client's reads stay under its address's limit: at most 1/1.1 of it per window.
    const getIntervalMs = Math.ceil((1.1 * rateLimit.windowMs) / rateLimit.max);
    const readsPerWindow = Math.floor(rateLimit.windowMs / getIntervalMs) + 1;
    // Waiting for the log used part of this address's allowance: if the reads would not fit in what is
    // left, that window runs out first (with requests to /health meanwhile: exempt, and a warm-up).
    let checkpoint = await readCheckpoint(client);
    const left = /r=(\d+);t=(\d+)/.exec(checkpoint.rateLimit);
    if (left === null || Number(left[1]) < readsPerWindow + WARM_UP_READS) {
      const resetMs = left === null ? rateLimit.windowMs : Number(left[2]) * 1000 + 200;
      log(`letting the window of ${CLIENT_ADDRESS} run out (${resetMs} ms)`);
      await steady(HEALTH_INTERVAL_MS, resetMs, async () => void (await send(client, get('/health'))));
      checkpoint = await readCheckpoint(client);
    }
    const size = checkpoint.size;
    if (size === undefined) throw new Error('no log checkpoint');
    log('waiting for the anchor of the seeded proofs');
    await waitForAnchor(port, ids[0] ?? '', rateLimit.windowMs, rateLimit.max);

    const context: AttackContext = { ids, proofs: options.proofs, treeSize: size };
    attacker = await startAttacker({ port, max: rateLimit.max, context });

    const durationMs = options.durationSeconds * 1000;
    let nextId = 0;
    for (let i = 0; i < WARM_UP_READS; i++)
      await send(client, get(`/api/proofs/${ids[nextId++ % ids.length] ?? ''}`));
    const measure = async () => {
      const health = new Recorder();
      const read = new Recorder();
      await Promise.all([
        steady(HEALTH_INTERVAL_MS, durationMs, async () => health.add(await send(client, get('/health')))),
        steady(getIntervalMs, durationMs, async () =>
          read.add(await send(client, get(`/api/proofs/${ids[nextId++ % ids.length] ?? ''}`))),
        ),
      ]);
      return { health: health.stats(), read: read.stats() };
    };
    log(`without attack: ${options.durationSeconds} s`);
    const quiet = await measure();
    log(`under attack: ${options.durationSeconds} s`);
    const [loud, seen] = await Promise.all([measure(), attacker.run(durationMs)]);
    log(`with hostile peers: ${options.durationSeconds} s`);
    const hostilePeers = await peersPhase({
      port,
      client,
      peers,
      ids,
      durationMs,
      healthMs: HEALTH_INTERVAL_MS,
      intervalMs: getIntervalMs,
    });
    log(`with hostile MCP clients: ${options.durationSeconds} s and a session flood`);
    const mcp = await mcpPhase({
      port,
      client,
      pid: service.process.pid,
      rateLimit,
      durationMs,
      healthMs: HEALTH_INTERVAL_MS,
    });
    log('each attack request alone');
    const alone = await timeAlone(port, context);

    const health = clientFigures('GET /health', quiet.health, loud.health);
    const read = clientFigures('GET /api/proofs/{id}', quiet.read, loud.read);
    const mcpFigures = { ...mcp, health: clientFigures('GET /health', quiet.health, mcp.health) };
    return {
      date: new Date().toISOString(),
      machine: describeMachine(os.availableParallelism()),
      options: {
        proofs: options.proofs,
        durationSeconds: options.durationSeconds,
        database: options.database === 'sqlite' ? 'sqlite' : 'postgres',
        windowMs: options.windowMs,
      },
      rateLimit,
      startupMs: Math.round(startupMs),
      treeSize: size,
      client: { health, get: read },
      peers: {
        health: clientFigures('GET /health', quiet.health, hostilePeers.health),
        ots: hostilePeers.ots,
        notarized: hostilePeers.notarized,
        calendarRequests: hostilePeers.calendarRequests,
        authorityRequests: hostilePeers.authorityRequests,
      },
      mcp: mcpFigures,
      goals: goalResults(
        health,
        read,
        clientFigures('GET /health', quiet.health, hostilePeers.health),
        mcpFigures,
      ),
      attacker: attackerFigures(seen, alone),
    };
  } finally {
    await attacker?.stop();
    clientAgent.destroy();
    service?.process.kill('SIGTERM');
    await peers?.close();
    directory.remove();
  }
}

/** Each attack request once, one after another, from a third address. */
async function timeAlone(port: number, context: AttackContext): Promise<{ ms: number; status: number }[]> {
  const agent = new http.Agent({ keepAlive: true });
  const target: Target = { port, localAddress: ALONE_ADDRESS, agent };
  try {
    const times: { ms: number; status: number }[] = [];
    for (const entry of ATTACKS) {
      const answer = await send(target, entry.request(context, ALONE_N));
      times.push({ ms: round(answer.ms), status: answer.status });
    }
    return times;
  } finally {
    agent.destroy();
  }
}

/** The log's size from its checkpoint (undefined for a 429), and the RateLimit field of the answer. */
async function readCheckpoint(client: Target): Promise<{ size: number | undefined; rateLimit: string }> {
  const answer = await send(client, get('/log/checkpoint'), true);
  const size = Number(answer.body.split('\n')[1]);
  if (answer.status !== 200 && answer.status !== 429) throw new Error(`/log/checkpoint: ${answer.status}`);
  return {
    size: answer.status === 200 && Number.isSafeInteger(size) ? size : undefined,
    rateLimit: String(answer.headers.ratelimit ?? ''),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      proofs: { type: 'string', default: '1000000' },
      duration: { type: 'string', default: '60' },
      database: { type: 'string', default: 'sqlite' },
      'window-ms': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const report = await runHostileBenchmark({
    proofs: Number(values.proofs),
    durationSeconds: Number(values.duration),
    database: values.database,
    ...(values['window-ms'] === undefined ? {} : { windowMs: Number(values['window-ms']) }),
    log: (line) => console.error(line),
  });
  console.log(formatHostileReport(report));
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(report, null, 2) + '\n');
}
