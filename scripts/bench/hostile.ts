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
 * Afterwards each kind of attack request is sent once more, alone, from 127.0.0.3 (its cost on the idle
 * service). Prints the client's latencies in both phases, the goals (under attack: `/health` p99 ≤ 50 ms
 * and max ≤ 250 ms; GET p99 ≤ 2 × its p99 without attack) as pass or fail, and what the attacker saw
 * per route.
 * It measures; a failed goal is printed, and the exit status stays 0. The service listens on 127.0.0.1;
 * Linux accepts any 127.x source address on the loopback interface, so the two clients count as two
 * addresses. Every request goes to the loopback interface, and every loop ends by itself.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { loadConfig } from '../../src/config.ts';
import { metadataHash, sha256Hex } from '../../src/core/hashing.ts';
import { tileIndexPath } from '../../src/core/merkle-tree.ts';
import { TILE_WIDTH } from '../../src/log/log-service.ts';
import { TSA_QUERY_MAX_BYTES } from '../../src/tsa/tsa-routes.ts';
import { describeMachine } from './lib/machine.ts';
import {
  benchEnvironment,
  freePort,
  sleep,
  startService,
  waitForLogSize,
  type RunningService,
} from './lib/service.ts';
import { percentile } from './lib/stats.ts';
import { SEED_METADATA, seed, seedHash } from './seed.ts';

/** The measuring client's source address; the service listens on it too. */
export const CLIENT_ADDRESS = '127.0.0.1';
/** The attacker's source address: another client for the rate limit, the same loopback interface. */
export const ATTACKER_ADDRESS = '127.0.0.2';
/** After the phases, each attack request is timed alone from this address (its own allowance). */
export const ALONE_ADDRESS = '127.0.0.3';
/** The `n` of the requests timed alone: other proofs than the attacker's first few thousand requests. */
const ALONE_N = 5000;
const HEALTH_INTERVAL_MS = 50;
/** Reads of seeded proofs sent before the phases (not measured), so the first measured read is not cold. */
const WARM_UP_READS = 3;
/** How often the attacker asks again once its allowance is spent (each answer a cheap 429). */
const ATTACKER_POLL_MS = 20;
/** A request unanswered after this long counts as an error (the service's own request timeout is 30 s). */
const REQUEST_TIMEOUT_MS = 35_000;
/** The longest wait for the seeded proofs to enter the log. */
const LOG_WAIT_MS = 20 * 60_000;

const GOALS = { healthP99Ms: 50, healthMaxMs: 250, getP99Ratio: 2 };

// ---------------------------------------------------------------------------------------------------
// The attack mix

export interface AttackContext {
  /** Ids of seeded proofs, spread evenly over all of them in seeding order (what `seed` returns). */
  ids: string[];
  /** How many proofs were seeded (seed numbers 0 … proofs − 1). */
  proofs: number;
  /** The log's size when the attack starts (the seeded proofs are its first entries, in seeding order). */
  treeSize: number;
}

export interface AttackRequest {
  method: 'GET' | 'POST';
  path: string;
  contentType?: string;
  body?: Buffer;
}

export interface Attack {
  route: string;
  /** The request; `n` counts this entry's earlier requests, so each can read something not cached. */
  request: (ctx: AttackContext, n: number) => AttackRequest;
}

const get = (path: string): AttackRequest => ({ method: 'GET', path });

/** A seeded proof from the second half of the sample, a different one each time (the client reads the first). */
function attackedId(ctx: AttackContext, n: number): string {
  const half = Math.max(1, Math.floor(ctx.ids.length / 2));
  return ctx.ids[ctx.ids.length - 1 - (n % half)] ?? '';
}

/**
 * A proof from the first quarter of the seeded ones and a tree size between half the log and the whole
 * log, never the same pair twice (the service keeps paths by leaf and size): an older tree's root is
 * recomputed from the stored nodes, and its checkpoint looked up.
 */
function inclusionPath(ctx: AttackContext, n: number): string {
  const quarter = Math.max(1, Math.floor(ctx.ids.length / 4));
  const id = ctx.ids[quarter - 1 - (n % quarter)] ?? '';
  const treeSize = ctx.treeSize - ((n * 7919) % Math.max(1, Math.floor(ctx.treeSize / 2)));
  return `/api/proofs/${id}/inclusion?treeSize=${treeSize}`;
}

/** The last full tile (the deepest index path the log serves), or the partial first one of a small log. */
const lastTile = (ctx: AttackContext) =>
  ctx.treeSize < TILE_WIDTH
    ? `000.p/${Math.max(1, ctx.treeSize)}`
    : tileIndexPath(Math.floor(ctx.treeSize / TILE_WIDTH) - 1);

/** DER: a tag, a definite length, the contents. */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const SHA256_IMPRINT = tlv(
  0x30,
  tlv(0x30, tlv(0x06, Buffer.from('608648016503040201', 'hex')), Buffer.from([0x05, 0x00])),
  tlv(0x04, Buffer.alloc(32, 0x5a)),
);

/**
 * A valid RFC 3161 TimeStampReq (version 1, a SHA-256 imprint, a nonce, certReq) with as many empty
 * extensions as fit in the largest query the service takes (TSA_QUERY_MAX_BYTES).
 */
function largeValidTsaQuery(): Buffer {
  const head = [
    tlv(0x02, Buffer.from([1])),
    SHA256_IMPRINT,
    tlv(0x02, Buffer.from('0102030405060708', 'hex')),
    tlv(0x01, Buffer.from([0xff])),
  ];
  const extension = (i: number) =>
    tlv(
      0x30,
      tlv(0x06, Buffer.from(i < 0x80 ? [0x2a, 0x03, i] : [0x2a, 0x03, 0x80 | (i >> 7), i & 0x7f])),
      tlv(0x04, Buffer.alloc(0)),
    );
  const build = (count: number) =>
    tlv(0x30, ...head, tlv(0xa0, ...Array.from({ length: count }, (_, i) => extension(i))));
  let count = 1;
  while (build(count + 1).length <= TSA_QUERY_MAX_BYTES) count++;
  return build(count);
}

/**
 * Not a TimeStampReq: a SEQUENCE of 3-byte INTEGERs up to the largest query the service takes, the
 * costliest refusal found (each element becomes a parser node before the parser gives up).
 */
function largeInvalidTsaQuery(): Buffer {
  const integer = Buffer.from([0x02, 0x01, 0x01]);
  const count = Math.floor((TSA_QUERY_MAX_BYTES - 8) / integer.length);
  return tlv(0x30, ...Array.from({ length: count }, () => integer));
}

/**
 * The most metadata a proof takes: objects nested 32 deep (the metadata object is the first) and as many
 * top-level keys as fit in 8192 bytes of JSON; every key name is published with the proof.
 */
function maximalMetadata(): Record<string, unknown> {
  let chain: unknown = 0;
  for (let level = 1; level < 32; level++) chain = { d: chain };
  const metadata: Record<string, unknown> = { d: chain };
  let size = Buffer.byteLength(JSON.stringify(metadata));
  for (let i = 0; ; i++) {
    const key = `k${i}`;
    const added = key.length + 5; // ,"k…":0
    if (size + added > 8192) break;
    metadata[key] = 0;
    size += added;
  }
  return metadata;
}

let bodies: { tsaValid: Buffer; tsaInvalid: Buffer; metadata: Record<string, unknown> } | undefined;
const attackBodies = () =>
  (bodies ??= {
    tsaValid: largeValidTsaQuery(),
    tsaInvalid: largeInvalidTsaQuery(),
    metadata: maximalMetadata(),
  });

/** A new proof with the largest label and idempotency key and the most metadata the service takes. */
function maximalNotarize(n: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      contentHash: 'sha256:' + sha256Hex(`hostile-${process.pid}-${n}`),
      label: `hostile ${n} `.padEnd(120, 'label'),
      metadata: attackBodies().metadata,
      idempotencyKey: `hostile-${process.pid}-${n}-`.padEnd(160, 'k'),
    }),
  );
}

const searchPage = 'limit=100';

/**
 * Each public route's most expensive request found by reading its code, in the order the attacker
 * rotates through them. Left out: routes that answer a constant document or static file (`/health`,
 * which is exempt, `/assets/…`, `/llms.txt`, `/robots.txt`, `/.well-known/*`, `/api/quickstart`,
 * `/api/discovery`, `/marketplace(.json)`, `/agents`, `/pricing`, `/demo`, `/api/tsa/certs.pem`,
 * `/log/checkpoint`), and the administrator's routes (refused without its key). Add a row to add a case.
 */
export const ATTACKS: Attack[] = [
  {
    // The trigram index cannot answer fewer than three characters: every label is scanned.
    route: 'GET /api/proofs/search?q= (2 characters, no match)',
    request: () => get(`/api/proofs/search?q=zq&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (1 character, no match)',
    request: () => get(`/api/proofs/search?q=${encodeURIComponent('ж')}&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (a word in a tenth of the labels)',
    request: () => get(`/api/proofs/search?q=build&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (trigrams that exist, never together)',
    request: () => get(`/api/proofs/search?q=12341234&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?metadataHash&q= (every proof, 2 characters)',
    request: () => get(`/api/proofs/search?metadataHash=${metadataHash(SEED_METADATA)}&q=zq&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?contentHash&accountId (disjoint)',
    request: (ctx, n) =>
      get(
        `/api/proofs/search?contentHash=${seedHash((n * 7919) % ctx.proofs)}&accountId=acct_x&${searchPage}`,
      ),
  },
  {
    route: 'GET /api/proofs/search?metadataHash&accountId (disjoint)',
    request: () =>
      get(`/api/proofs/search?metadataHash=${metadataHash(SEED_METADATA)}&accountId=acct_x&${searchPage}`),
  },
  { route: 'GET /proofs?q= (HTML, 2 characters)', request: () => get('/proofs?q=zq') },
  { route: 'GET /api/proofs/recent?limit=100', request: () => get('/api/proofs/recent?limit=100') },
  { route: 'GET /api/dashboard/summary', request: () => get('/api/dashboard/summary') },
  { route: 'GET /dashboard', request: () => get('/dashboard') },
  { route: 'GET /', request: () => get('/') },
  { route: 'GET /api/status', request: () => get('/api/status') },
  { route: 'GET /api/trust', request: () => get('/api/trust') },
  { route: 'GET /trust', request: () => get('/trust') },
  { route: 'GET /sitemap.xml', request: () => get('/sitemap.xml') },
  {
    route: 'GET /api/verify/proofs/{id}',
    request: (ctx, n) => get(`/api/verify/proofs/${attackedId(ctx, n)}`),
  },
  { route: 'GET /proof/{id}', request: (ctx, n) => get(`/proof/${attackedId(ctx, n + 7)}`) },
  {
    route: 'GET /api/proofs/{id}/tlog-proof',
    request: (ctx, n) => get(`/api/proofs/${attackedId(ctx, n + 13)}/tlog-proof`),
  },
  {
    route: 'GET /api/proofs/{id}/timestamp.tsr',
    request: (ctx, n) => get(`/api/proofs/${attackedId(ctx, n + 19)}/timestamp.tsr`),
  },
  {
    route: 'GET /api/proofs/{id}/inclusion?treeSize= (older trees)',
    request: (ctx, n) => get(inclusionPath(ctx, n)),
  },
  {
    route: 'GET /api/log/consistency?from=1&to=<log size>',
    request: (ctx) => get(`/api/log/consistency?from=1&to=${ctx.treeSize}`),
  },
  {
    route: 'GET /log/tile/entries/<last full bundle>',
    request: (ctx) => get(`/log/tile/entries/${lastTile(ctx)}`),
  },
  { route: 'GET /log/tile/0/<last full tile>', request: (ctx) => get(`/log/tile/0/${lastTile(ctx)}`) },
  {
    route: 'POST /api/tsa (1 KiB: as many extensions as fit, valid)',
    request: () => ({
      method: 'POST',
      path: '/api/tsa',
      contentType: 'application/timestamp-query',
      body: attackBodies().tsaValid,
    }),
  },
  {
    route: 'POST /api/tsa (1 KiB of INTEGERs, invalid)',
    request: () => ({
      method: 'POST',
      path: '/api/tsa',
      contentType: 'application/timestamp-query',
      body: attackBodies().tsaInvalid,
    }),
  },
  {
    route: 'POST /api/proof/notarize (8192-byte metadata, depth 32)',
    request: (_ctx, n) => ({
      method: 'POST',
      path: '/api/proof/notarize',
      contentType: 'application/json',
      body: maximalNotarize(n),
    }),
  },
  { route: 'GET /api/capabilities', request: () => get('/api/capabilities') },
  { route: 'GET /openapi.json', request: () => get('/openapi.json') },
  { route: 'GET /api/actions', request: () => get('/api/actions') },
];

// ---------------------------------------------------------------------------------------------------
// HTTP from a chosen source address

interface Target {
  port: number;
  localAddress: string;
  agent: http.Agent;
}

interface Answer {
  /** The status code; 0 when no answer came (connection error or timeout). */
  status: number;
  ms: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request; resolves (never rejects) once the whole answer is read or the request failed. */
function send(target: Target, request: AttackRequest, keepBody = false): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    const headers: http.OutgoingHttpHeaders = {};
    if (request.contentType !== undefined) headers['content-type'] = request.contentType;
    if (request.body !== undefined) headers['content-length'] = request.body.length;
    const req = http.request(
      {
        host: '127.0.0.1',
        port: target.port,
        localAddress: target.localAddress,
        agent: target.agent,
        method: request.method,
        path: request.path,
        headers,
        timeout: REQUEST_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          if (keepBody) chunks.push(chunk);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            ms: performance.now() - started,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', () => resolve({ status: 0, ms: performance.now() - started, headers: {}, body: '' }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started, headers: {}, body: '' }));
    req.end(request.body);
  });
}

/**
 * Calls `fire` every `intervalMs` until `durationMs` have passed, without waiting for earlier calls (a
 * stalled service then shows in every request sent meanwhile, not in one), and waits for all of them.
 */
async function steady(
  intervalMs: number,
  durationMs: number,
  fire: (i: number) => Promise<void>,
): Promise<void> {
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; start + i * intervalMs < start + durationMs; i++) {
    await sleep(start + i * intervalMs - performance.now());
    pending.push(fire(i));
  }
  await Promise.all(pending);
}

// ---------------------------------------------------------------------------------------------------
// Figures

export interface LatencyStats {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers by status code; `error` for requests that got none. */
  statuses: Record<string, number>;
}

export interface ClientFigures {
  route: string;
  withoutAttack: LatencyStats;
  underAttack: LatencyStats;
  /** p99 under attack / p99 without attack. */
  p99Ratio: number;
}

export interface GoalResult {
  goal: string;
  measured: string;
  pass: boolean;
}

export interface AttackRouteStats {
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
  goals: GoalResult[];
  attacker: { sent: number; served: number; limited: number; routes: AttackRouteStats[] };
}

class Recorder {
  readonly times: number[] = [];
  readonly statuses: Record<string, number> = {};

  add(answer: Answer): void {
    // A request without an answer counts with the time it waited.
    this.times.push(answer.ms);
    const key = answer.status === 0 ? 'error' : String(answer.status);
    this.statuses[key] = (this.statuses[key] ?? 0) + 1;
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

const round = (ms: number) => Math.round(ms * 100) / 100;

// ---------------------------------------------------------------------------------------------------
// The attacker (a worker thread, so its work does not delay the measuring client's timers)

interface AttackerData {
  role: 'hostile-attacker';
  port: number;
  max: number;
  context: AttackContext;
}

interface AttackerResult {
  routes: { route: string; sent: number; statuses: Record<string, number>; served: number[] }[];
}

async function attack(data: AttackerData, durationMs: number): Promise<AttackerResult> {
  const agent = new http.Agent({ keepAlive: true });
  const target: Target = { port: data.port, localAddress: ATTACKER_ADDRESS, agent };
  const routes: AttackerResult['routes'] = ATTACKS.map((entry) => ({
    route: entry.route,
    sent: 0,
    statuses: {},
    served: [],
  }));
  let next = 0;
  const fire = async (): Promise<Answer> => {
    const index = next++ % ATTACKS.length;
    const entry = ATTACKS[index];
    const stats = routes[index];
    if (entry === undefined || stats === undefined) throw new Error('no such attack');
    const answer = await send(target, entry.request(data.context, stats.sent++));
    const key = answer.status === 0 ? 'error' : String(answer.status);
    stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
    if (answer.status !== 429 && answer.status !== 0) stats.served.push(answer.ms);
    return answer;
  };
  const burst = (count: number) => Promise.all(Array.from({ length: count }, () => fire()));
  const until = performance.now() + durationMs;
  // The address has not been seen yet: its first window opens with this burst.
  await burst(data.max);
  while (performance.now() < until) {
    const answer = await fire();
    // Let through after 429s: a new window began with it, and the rest of its allowance goes at once.
    if (answer.status !== 429 && answer.status !== 0 && performance.now() < until) await burst(data.max - 1);
    else await sleep(ATTACKER_POLL_MS);
  }
  agent.destroy();
  return { routes };
}

if (
  !isMainThread &&
  parentPort !== null &&
  (workerData as Partial<AttackerData> | null)?.role === 'hostile-attacker'
) {
  const port = parentPort;
  attackBodies();
  port.once('message', (message: { durationMs: number }) => {
    void attack(workerData as AttackerData, message.durationMs).then((result) => port.postMessage(result));
  });
  port.postMessage('ready');
}

/** Starts the attacker's thread; `run` lets it loose for `durationMs` and resolves with what it saw. */
async function startAttacker(
  data: Omit<AttackerData, 'role'>,
): Promise<{ run: (durationMs: number) => Promise<AttackerResult>; stop: () => Promise<number> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { ...data, role: 'hostile-attacker' } });
  let failed: (error: Error) => void = () => {};
  worker.on('error', (error) => failed(error));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      failed = reject;
      worker.once('message', resolve);
    });
  await next<string>();
  return {
    run: (durationMs) => {
      const result = next<AttackerResult>();
      worker.postMessage({ durationMs });
      return result;
    },
    stop: () => worker.terminate(),
  };
}

/** `promise`, or an error after `ms`; the timer does not outlive it. */
async function within<T>(ms: number, promise: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------
// The run

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
  const clientAgent = new http.Agent({ keepAlive: true });
  const client: Target = { port, localAddress: CLIENT_ADDRESS, agent: clientAgent };
  let attacker: Awaited<ReturnType<typeof startAttacker>> | undefined;
  try {
    log(`seeding ${options.proofs} proofs`);
    const ids = await seed({ ...process.env, ...env }, options.proofs, log);
    service = await startService(env);
    const { startupMs } = service;
    log(`service up in ${Math.round(startupMs)} ms; waiting for ${options.proofs} proofs in the log`);
    await within(
      LOG_WAIT_MS,
      Promise.race([waitForLogSize(service.url, options.proofs), service.exited]),
      'the seeded proofs did not enter the log in time',
    );

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
    log('each attack request alone');
    const alone = await timeAlone(port, context);

    const figures = (route: string, without: LatencyStats, under: LatencyStats): ClientFigures => ({
      route,
      withoutAttack: without,
      underAttack: under,
      p99Ratio: round(under.p99Ms / without.p99Ms),
    });
    const health = figures('GET /health', quiet.health, loud.health);
    const read = figures('GET /api/proofs/{id}', quiet.read, loud.read);
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
      goals: [
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
      ],
      attacker: { sent, served: sent - limited - errors, limited, routes },
    };
  } finally {
    await attacker?.stop();
    clientAgent.destroy();
    service?.process.kill('SIGTERM');
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

// ---------------------------------------------------------------------------------------------------
// The report

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
    '',
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

if (import.meta.main && isMainThread) {
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
