/**
 * The hostile-MCP-clients phase of the hostile-load benchmark: clients of the service's MCP endpoint
 * (`/mcp`) that send only what it must refuse, each kind from addresses of its own at the pace their
 * rate limit allows (`MCP_MESSAGES`, a table: oversized, unknown tool, bad params, not JSON, a wrong
 * JSON-RPC version, batches of garbage, an empty batch, unknown or missing sessions), while a flood of
 * `initialize` calls from further addresses opens sessions, never ending one (each address until its
 * own cap of 20 answers 429), until the session cap answers 503. Meanwhile the measuring client asks `/health` every 50 ms, and the service's resident
 * memory is read from /proc before, during and after. Every answer is checked against the refusal its
 * kind must get: its status and its code (the error envelope's `code`, or the JSON-RPC error's).
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { sleep } from '../lib/service.ts';
import { percentile } from '../lib/stats.ts';
import type { AttackRequest } from './attacks.ts';
import { get } from './attacks.ts';
import { countStatus, Recorder, round, type LatencyStats } from './figures.ts';
import { send, steady, type Answer, type Target } from './http.ts';

/** The hostile clients' addresses: `127.0.1.<n>`, one per kind of message. */
const MESSAGE_ADDRESS = (n: number) => `127.0.1.${n + 1}`;
const ADDRESSES_PER_KIND = 1;
/** The flood's addresses: `127.0.2.<n>`, each spending its whole allowance on `initialize`. */
const FLOOD_ADDRESS = (n: number) => `127.0.2.${n + 1}`;
/** The most addresses the flood uses: far past a cap of 1,000 sessions at any rate limit of 10 or more. */
const FLOOD_MAX_ADDRESSES = 250;
/** Initialize calls in flight at once per flood address. */
const FLOOD_CONCURRENCY = 4;
/** The flood stops after this many refusals past the cap. */
const FLOOD_REFUSALS = 50;
/** The service's body limit is 128 KiB: twice that. */
const OVERSIZED_BYTES = 256 * 1024;
const PROTOCOL_VERSION = '2025-06-18';
const RSS_EVERY_MS = 250;

const rpc = (method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) });
const initialize = rpc('initialize', {
  protocolVersion: PROTOCOL_VERSION,
  capabilities: {},
  clientInfo: { name: 'hostile', version: '1' },
});

interface HostileMessage {
  kind: string;
  /** The refusal: its status and code (a string: the envelope's; a number: the JSON-RPC error's). */
  expected: { status: number; code: string | number };
  /** Sent in the client's own session, with a session id no one has, or with none. */
  session: 'own' | 'unknown' | 'none';
  body: () => string;
}

export const MCP_MESSAGES: HostileMessage[] = [
  {
    kind: 'oversized (256 KiB, twice the body limit)',
    expected: { status: 413, code: 'payload_too_large' },
    session: 'own',
    body: () => {
      const bare = rpc('tools/call', { name: 'notarize', arguments: { pad: '' } });
      return rpc('tools/call', {
        name: 'notarize',
        arguments: { pad: 'x'.repeat(OVERSIZED_BYTES - bare.length) },
      });
    },
  },
  {
    kind: 'tools/call of an unknown tool',
    expected: { status: 200, code: -32602 },
    session: 'own',
    body: () => rpc('tools/call', { name: 'no_such_tool', arguments: {} }),
  },
  {
    kind: 'tools/call without params',
    expected: { status: 200, code: -32602 },
    session: 'own',
    body: () => rpc('tools/call'),
  },
  {
    kind: 'not JSON',
    expected: { status: 400, code: 'invalid_json' },
    session: 'own',
    body: () => '{"jsonrpc": "2.0", "id": 1, "method": ',
  },
  {
    kind: 'jsonrpc "1.0"',
    expected: { status: 400, code: -32700 },
    session: 'own',
    body: () => JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'tools/list' }),
  },
  {
    kind: 'a batch of garbage [1, "x", null, {}]',
    expected: { status: 400, code: -32700 },
    session: 'own',
    body: () => '[1, "x", null, {}]',
  },
  {
    kind: 'an empty batch []',
    expected: { status: 400, code: 'invalid_request' },
    session: 'own',
    body: () => '[]',
  },
  {
    kind: 'a batch of two initialize calls',
    expected: { status: 400, code: -32600 },
    session: 'own',
    body: () => `[${initialize}, ${initialize.replace('"id":1', '"id":2')}]`,
  },
  {
    kind: 'tools/list without a session',
    expected: { status: 400, code: 'invalid_request' },
    session: 'none',
    body: () => rpc('tools/list'),
  },
  {
    kind: 'tools/list in an unknown session',
    expected: { status: 404, code: 'not_found' },
    session: 'unknown',
    body: () => rpc('tools/list'),
  },
];

interface MessageFigures {
  kind: string;
  expected: { status: number; code: string | number };
  sent: number;
  statuses: Record<string, number>;
  /** Answers with the expected status and code. */
  asExpected: number;
  /** The first few other answers: status and the start of the body. */
  unexpected: string[];
  p50Ms: number;
  maxMs: number;
}

export interface McpFigures {
  health: LatencyStats;
  messages: MessageFigures[];
  flood: {
    addresses: number;
    sent: number;
    statuses: Record<string, number>;
    /** Sessions the flood opened (200 with a session id). */
    opened: number;
    /** 503 answers with the `service_unavailable` envelope and a Retry-After header. */
    refused: number;
    /** 429 answers to an address at its own cap of sessions (`rate_limited`, `details.openSessions`). */
    capped: number;
    /** Answers that were neither. */
    unexpected: string[];
    ms: number;
  };
  /** Sessions the hostile clients opened for themselves before the flood. */
  ownSessions: number;
  /** The service's resident memory (MiB): before the phase, its highest during, after it; null off Linux. */
  rssMiB: { before: number | null; peak: number | null; after: number | null };
}

const headersFor = (session: string | undefined): Record<string, string> => ({
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': PROTOCOL_VERSION,
  ...(session === undefined ? {} : { 'mcp-session-id': session }),
});

const post = (body: string, session?: string): AttackRequest => ({
  method: 'POST',
  path: '/mcp',
  contentType: 'application/json',
  body: Buffer.from(body),
  headers: headersFor(session),
});

/** The code of an answer: the envelope's or the JSON-RPC error's; undefined for none. */
function codeOf(answer: Answer): string | number | undefined {
  try {
    const parsed = JSON.parse(answer.body) as { error?: { code?: string | number } };
    return parsed.error?.code;
  } catch {
    return undefined;
  }
}

/** A 429 for an address at its own cap of sessions (not the rate limit): it names its open sessions. */
function isAtOwnCap(answer: Answer): boolean {
  try {
    const parsed = JSON.parse(answer.body) as { error?: { details?: { openSessions?: unknown } } };
    return typeof parsed.error?.details?.openSessions === 'number';
  } catch {
    return false;
  }
}

const summary = (answer: Answer) => `${answer.status} ${answer.body.slice(0, 160)}`;

/** The resident set size of a process in MiB, from /proc (null where there is none). */
function rssMiB(pid: number | undefined): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? null : round(Number(match[1]) / 1024);
  } catch {
    return null;
  }
}

/** Opens a session from `target`: its id. */
async function openSession(target: Target): Promise<string> {
  const answer = await send(target, post(initialize), true);
  const id = answer.headers['mcp-session-id'];
  if (answer.status !== 200 || typeof id !== 'string') throw new Error(`initialize: ${summary(answer)}`);
  const initialized = await send(
    target,
    post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), id),
  );
  if (initialized.status !== 202) throw new Error(`notifications/initialized: ${summary(initialized)}`);
  return id;
}

/**
 * Initialize calls, `max` per address (its whole allowance), address after address, until the cap
 * has refused `FLOOD_REFUSALS` of them; no session is ever ended.
 */
async function flood(port: number, max: number, agent: http.Agent): Promise<McpFigures['flood']> {
  const started = performance.now();
  const statuses: Record<string, number> = {};
  const unexpected: string[] = [];
  let opened = 0;
  let refused = 0;
  let capped = 0;
  let sent = 0;
  let addresses = 0;
  for (; addresses < FLOOD_MAX_ADDRESSES && refused < FLOOD_REFUSALS; addresses++) {
    const target: Target = { port, localAddress: FLOOD_ADDRESS(addresses), agent };
    let left = max;
    const worker = async () => {
      // An address at its own cap of sessions moves on to the next address.
      while (left > 0 && refused < FLOOD_REFUSALS) {
        left--;
        sent++;
        const answer = await send(target, post(initialize), true);
        countStatus(statuses, answer);
        if (answer.status === 200 && typeof answer.headers['mcp-session-id'] === 'string') opened++;
        else if (
          answer.status === 503 &&
          codeOf(answer) === 'service_unavailable' &&
          answer.headers['retry-after'] !== undefined
        )
          refused++;
        else if (answer.status === 429 && codeOf(answer) === 'rate_limited' && isAtOwnCap(answer)) {
          capped++;
          left = 0;
        } else if (unexpected.length < 5) unexpected.push(summary(answer));
      }
    };
    await Promise.all(Array.from({ length: FLOOD_CONCURRENCY }, worker));
  }
  return {
    addresses,
    sent,
    statuses,
    opened,
    refused,
    capped,
    unexpected,
    ms: round(performance.now() - started),
  };
}

/** The phase: `durationMs` of hostile messages and the flood, with /health asked every `healthMs`. */
export async function mcpPhase(options: {
  port: number;
  client: Target;
  pid: number | undefined;
  rateLimit: { max: number; windowMs: number };
  durationMs: number;
  healthMs: number;
}): Promise<McpFigures> {
  const { port, client, pid, rateLimit, durationMs, healthMs } = options;
  const agent = new http.Agent({ keepAlive: true });
  const floodAgent = new http.Agent({ keepAlive: true });
  // Each address stays under its limit: at most 1/1.1 of it per window, its session's opening included.
  const intervalMs = Math.ceil((1.1 * rateLimit.windowMs) / (rateLimit.max - 2));
  const rss = { before: rssMiB(pid), peak: rssMiB(pid), after: null as number | null };
  const sampler = setInterval(() => {
    const now = rssMiB(pid);
    if (now !== null && (rss.peak === null || now > rss.peak)) rss.peak = now;
  }, RSS_EVERY_MS);
  try {
    const clients = await Promise.all(
      MCP_MESSAGES.flatMap((message, k) =>
        Array.from({ length: ADDRESSES_PER_KIND }, async (_, a) => {
          const target: Target = { port, localAddress: MESSAGE_ADDRESS(k * ADDRESSES_PER_KIND + a), agent };
          const session =
            message.session === 'own'
              ? await openSession(target)
              : message.session === 'unknown'
                ? 'no-such-session'
                : undefined;
          return { message, target, session };
        }),
      ),
    );
    const ownSessions =
      MCP_MESSAGES.filter((message) => message.session === 'own').length * ADDRESSES_PER_KIND;
    const health = new Recorder();
    const answers = MCP_MESSAGES.map(() => [] as Answer[]);
    const [, , floodFigures] = await Promise.all([
      steady(healthMs, durationMs, async () => health.add(await send(client, get('/health')))),
      Promise.all(
        clients.map(async ({ message, target, session }) => {
          // One request in flight, each at least `intervalMs` after the one before: never over the
          // limit, even when answers bunch up behind a slow one.
          const until = performance.now() + durationMs;
          while (performance.now() < until) {
            const sent = performance.now();
            const answer = await send(target, post(message.body(), session), true);
            answers[MCP_MESSAGES.indexOf(message)]?.push(answer);
            await sleep(sent + intervalMs - performance.now());
          }
        }),
      ),
      flood(port, rateLimit.max, floodAgent),
    ]);
    rss.after = rssMiB(pid);
    return {
      health: health.stats(),
      messages: MCP_MESSAGES.map((message, i) => figuresOf(message, answers[i] ?? [])),
      flood: floodFigures,
      ownSessions,
      rssMiB: rss,
    };
  } finally {
    clearInterval(sampler);
    agent.destroy();
    floodAgent.destroy();
  }
}

function figuresOf(message: HostileMessage, answers: Answer[]): MessageFigures {
  const statuses: Record<string, number> = {};
  const unexpected: string[] = [];
  let asExpected = 0;
  for (const answer of answers) {
    countStatus(statuses, answer);
    if (answer.status === message.expected.status && codeOf(answer) === message.expected.code) asExpected++;
    else if (unexpected.length < 3) unexpected.push(summary(answer));
  }
  const times = answers.map((answer) => answer.ms).sort((a, b) => a - b);
  return {
    kind: message.kind,
    expected: message.expected,
    sent: answers.length,
    statuses,
    asExpected,
    unexpected,
    p50Ms: round(percentile(times, 50)),
    maxMs: round(times.at(-1) ?? Number.NaN),
  };
}
