import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { createContext, type AppContext, type ContextOverrides } from '../src/context.ts';
import { loggerOptions } from '../src/platform/log-options.ts';
import { Arrivals, eventually } from './wait.ts';

export interface TestServer {
  baseUrl: string;
  app: FastifyInstance;
  ctx: AppContext;
  dataDir: string;
  /** Every log line the server wrote, as text (for secret-leak checks). */
  logs: string[];
  /** Resolves with every log line so far once `enough` holds for them, checked as each line is written. */
  logged(enough: (lines: string[]) => boolean, what: string): Promise<string[]>;
  /** Resolves once the access-log line of the request that got `response`, its last line, is written. */
  requestLogged(response: { headers: Headers }): Promise<string[]>;
  /** Stops the server; the data directory stays until `cleanup` (for restart tests). */
  close(): Promise<void>;
  cleanup(): void;
}

export const ADMIN_KEY = 'test-admin-key-0123456789';
export const adminHeaders = { 'x-service-admin-key': ADMIN_KEY };

export interface StartOptions extends ContextOverrides {
  env?: Record<string, string>;
  /** Reuse a data directory (a restart of the same database). */
  dataDir?: string;
}

export function makeDataDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'hashproof-test-'));
}

/** A free loopback port, so the server's configured public URL names the port it really listens on. */
/** A maker of fresh directories for a test file, every one removed after the file's tests. */
export function scratchDirs(): () => string {
  const made: string[] = [];
  after(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  return () => {
    const dir = makeDataDir();
    made.push(dir);
    return dir;
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * The database a test server uses: a SQLite file in its data directory by default; with
 * TEST_DATABASE_URL=postgres://…, a schema of its own in that database (named after the data directory, so
 * a restart on the same directory finds the same data), so test files can run in parallel.
 */
export async function testDatabaseUrl(dataDir: string): Promise<string> {
  const base = process.env.TEST_DATABASE_URL;
  if (base === undefined || base === '') return `sqlite:${path.join(dataDir, 'hashproof.db')}`;
  const schema = schemaOf(dataDir);
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(`create schema if not exists ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** A random schema name, kept in the data directory so a restart on that directory finds it again. */
function schemaOf(dataDir: string): string {
  const file = path.join(dataDir, '.postgres-schema');
  if (existsSync(file)) return readFileSync(file, 'utf8');
  const schema = 't_' + randomUUID().replaceAll('-', '');
  writeFileSync(file, schema);
  return schema;
}

export async function dropTestSchema(dataDir: string): Promise<void> {
  const base = process.env.TEST_DATABASE_URL;
  const file = path.join(dataDir, '.postgres-schema');
  if (base === undefined || base === '' || !existsSync(file)) return;
  const schema = readFileSync(file, 'utf8');
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(`drop schema if exists ${schema} cascade`);
  } finally {
    await client.end();
  }
}

export const isPostgres = (): boolean => (process.env.TEST_DATABASE_URL ?? '') !== '';

/** Starts the real service on loopback against a real SQLite file, configured as an operator would. */
export async function startServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? makeDataDir();
  const port = await freePort();
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: await testDatabaseUrl(dataDir),
    // Each test server has keys of its own (with PostgreSQL there is no data directory to hold them).
    SIGNING_KEYS_DIR: path.join(dataDir, 'keys'),
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'info',
    ...options.env,
  });
  const logs = new Arrivals<string>();
  const stream = { write: (line: string) => logs.add(line) };
  const logged = (enough: (lines: string[]) => boolean, what: string) => logs.until(enough, { what });
  const ctx = await createContext(config, {
    logger: pino(loggerOptions(config.logLevel), stream),
    ...options,
  });
  const app = await buildApp(ctx, { logStream: stream });
  await app.listen({ host: '127.0.0.1', port });
  ctx.start();
  let isClosed = false;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    app,
    ctx,
    dataDir,
    logs: logs.items,
    logged,
    requestLogged: (response) => {
      const reqId = `"reqId":"${response.headers.get('x-request-id')}"`;
      const isAccessLine = (line: string) => line.includes(reqId) && line.includes('"msg":"request"');
      return logged((lines) => lines.some(isAccessLine), `the access-log line of ${reqId}`);
    },
    async close() {
      if (isClosed) return;
      isClosed = true;
      await app.close();
      await ctx.close();
    },
    cleanup: () => {
      void dropTestSchema(dataDir)
        .catch(() => {})
        .finally(() => rmSync(dataDir, { recursive: true, force: true }));
    },
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A JSON request the way a client sends it; the body is parsed when the answer is JSON. */
export async function api<T = any>(
  baseUrl: string,
  pathname: string,
  init: { method?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | Buffer | undefined;
  if (init.rawBody !== undefined) body = init.rawBody;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(baseUrl + pathname, {
    method: init.method ?? (body ? 'POST' : 'GET'),
    headers,
    body,
  });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json') ?? false;
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: (isJson && text ? JSON.parse(text) : undefined) as T,
  };
}

export const sampleHash = (n: number): string => 'sha256:' + n.toString(16).padStart(64, '0');

export function notarizeBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    contentHash: sampleHash(1),
    label: 'release v1.0.0',
    idempotencyKey: `key-${Math.random()}`,
    ...overrides,
  };
}

/** Asserts the error envelope (docs/api.md, "Errors") and returns the error. */
export function expectError(
  response: ApiResponse,
  status: number,
  code: string,
): { code: string; message: string; details: any } {
  const detail = `${response.status} ${response.text}`;
  if (response.status !== status) throw new Error(`expected ${status} ${code}, got ${detail}`);
  const error = response.body?.error;
  if (
    error?.code !== code ||
    typeof error.message !== 'string' ||
    typeof error.details !== 'object' ||
    error.details === null
  ) {
    throw new Error(`expected an error envelope with code ${code}, got ${detail}`);
  }
  if (Object.keys(response.body).length !== 1) throw new Error(`unexpected fields beside error: ${detail}`);
  return error;
}

/**
 * Whether a local service answers. A suite that needs one is skipped with its reason on a machine
 * without it, and fails in CI (CI=true), where every service must be there.
 */
export async function requireService(name: string, url: string): Promise<string | false> {
  const { hostname, port } = new URL(url);
  const isUp = await new Promise<boolean>((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.setTimeout(1000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
  if (isUp) return false;
  const reason = `${name} is not reachable at ${url}`;
  if (process.env.CI === 'true') throw new Error(`${reason}; CI needs it`);
  return `skipped: ${reason}`;
}

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A proof without its `log` field: the one field that changes after creation (null until the
 * sequencer integrates the proof, within about a second), for comparing two reads of one proof.
 */
export function ignoringLog<T extends { log?: unknown }>(proof: T): Omit<T, 'log'> {
  const { log: _log, ...rest } = proof;
  return rest;
}

/** The attempts recorded for the account's first webhook, once there are `count`, in attempt order. */
export async function recordedAttempts(baseUrl: string, accountId: string, count: number): Promise<any[]> {
  const deliveries = await eventually(
    async () =>
      (await api(baseUrl, `/api/accounts/${accountId}/webhooks`, { headers: adminHeaders })).body.webhooks[0]
        .recentDeliveries as any[],
    { what: `${count} recorded webhook attempts`, until: (recorded) => recorded.length >= count },
  );
  return [...deliveries].sort((a, b) => a.attempt - b.attempt);
}

/** The proof once the sequencer has integrated it: its `log` holds its leaf index. */
export function loggedProof(baseUrl: string, id: string): Promise<any> {
  return eventually(async () => (await api(baseUrl, `/api/proofs/${id}`)).body.proof, {
    what: `${id} enters the log`,
    until: (proof) => proof.log !== null,
    timeoutMs: 20_000,
  });
}

/** The verification report of a proof once its inclusion in the log could be checked (valid or not). */
export function inclusionChecked(baseUrl: string, id: string): Promise<ApiResponse> {
  return eventually(() => api(baseUrl, `/api/verify/proofs/${id}`), {
    what: `the inclusion of ${id} is checked`,
    until: (report) => report.status !== 200 || report.body.checks.inclusion.status !== 'unavailable',
    timeoutMs: 20_000,
  });
}
