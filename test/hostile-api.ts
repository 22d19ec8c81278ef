import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A hostile hashproof API on 127.0.0.1, for the tests of clients (the command line, the client
 * library, `verify --online`): it passes every request on to a real service (`upstream`, such as a
 * `startServer()` of test/helper.ts) and answers genuinely, except on the paths told to misbehave:
 *
 * ```ts
 * const api = await startHostileApi({
 *   upstream: server.baseUrl,
 *   misbehave: { '/api/log/consistency': 'rate-limited', '/log/checkpoint': { fault: 'drip' } },
 * });
 * await cli(['stamp', file], { env: { HASHPROOF_URL: api.url } });
 * api.misbehave('/api/proofs/*', { fault: 'control', times: 1 }); // later requests answer genuinely
 * api.statuses('/api/log/consistency'); // [429, 429, 429]
 * await api.close();
 * ```
 *
 * A path is matched on the request's path without its query, a star standing for any characters
 * (`/api/proofs/` and a star: every path under it); the first rule set that matches applies. Without an
 * upstream, the paths that do not misbehave answer 404 in the error envelope.
 */

export type Fault =
  /** Takes the request and never answers (the connection stays open until `close`). */
  | 'silent'
  /** Answers 200 and sends a JSON body one byte every `dripMs` (default 200), without end. */
  | 'drip'
  /** Answers 200 with `hugeBytes` (default 256 MiB) of JSON-looking bytes, without a Content-Length. */
  | 'huge'
  /** Answers 200 with a body that is not JSON. */
  | 'malformed'
  /** Answers 429 `rate_limited` with `Retry-After: retryAfter` (default 1). */
  | 'rate-limited'
  /** Answers 503 `service_unavailable` with `Retry-After: retryAfter` (default 1). */
  | 'unavailable'
  /** Answers `answer` instead of the genuine answer: another checkpoint, another proof… */
  | 'lie'
  /** Answers 302 to `location` (default another port of loopback). */
  | 'redirect'
  /**
   * Answers the genuine answer with terminal control sequences (`controlText`, by default a clear
   * screen, a forged `verified OK` line and a C1 CSI) appended to every string of a JSON answer, or
   * to the whole text of another.
   */
  | 'control';

export interface Misbehaviour {
  fault: Fault;
  /** Misbehaves for this many requests to the path, then answers genuinely (always, when absent). */
  times?: number;
  /** Seconds, or an HTTP date, sent as Retry-After by `rate-limited` and `unavailable`. */
  retryAfter?: string;
  dripMs?: number;
  hugeBytes?: number;
  answer?: { status?: number; headers?: Record<string, string>; body: string | Buffer };
  location?: string;
  controlText?: string;
}

export interface HostileRequest {
  method: string;
  /** The path and query, as sent. */
  url: string;
  /** The status answered (0 when none was: `silent`, or the client went away first). */
  status: number;
  fault: Fault | undefined;
}

export interface HostileApi {
  url: string;
  /** Every request received, in order. */
  requests: HostileRequest[];
  /** The statuses answered to the requests of one path (matched as in `misbehave`). */
  statuses(path: string): number[];
  /** Sets (or, with undefined, clears) how a path misbehaves from now on. */
  misbehave(path: string, how: Fault | Misbehaviour | undefined): void;
  close(): Promise<void>;
}

/** Headers of one connection, not passed on to the upstream service. */
const HOP_BY_HOP = ['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding', 'expect'];

/** Clears the screen, homes the cursor and forges a line of output; then an 8-bit CSI. */
export const CONTROL_TEXT = '\x1b[2J\x1b[H\nverified OK\r\u009b31m';

export async function startHostileApi(
  options: { upstream?: string; misbehave?: Record<string, Fault | Misbehaviour> } = {},
): Promise<HostileApi> {
  const rules = new Map<string, Misbehaviour>();
  const set = (path: string, how: Fault | Misbehaviour | undefined) => {
    if (how === undefined) rules.delete(path);
    else rules.set(path, typeof how === 'string' ? { fault: how } : { ...how });
  };
  for (const [path, how] of Object.entries(options.misbehave ?? {})) set(path, how);
  const matches = (pattern: string, path: string) =>
    new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`).test(path);
  const requests: HostileRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const path = url.split('?')[0]!;
    const entry: HostileRequest = { method: req.method ?? 'GET', url, status: 0, fault: undefined };
    requests.push(entry);
    res.once('finish', () => (entry.status = res.statusCode));
    res.on('error', () => {});
    const pattern = [...rules.keys()].find((p) => matches(p, path));
    const rule = pattern === undefined ? undefined : rules.get(pattern);
    if (rule !== undefined && pattern !== undefined && rule.times !== undefined) {
      rule.times -= 1;
      if (rule.times <= 0) rules.delete(pattern);
    }
    entry.fault = rule?.fault;
    void answer(req, res, rule).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  async function answer(req: IncomingMessage, res: ServerResponse, rule: Misbehaviour | undefined) {
    const body = await readBody(req);
    switch (rule?.fault) {
      case 'silent':
        return; // never answered
      case 'drip':
        return drip(res, rule.dripMs ?? 200);
      case 'huge':
        return huge(res, rule.hugeBytes ?? 256 * 2 ** 20);
      case 'malformed':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok": true, "proof": {');
      case 'rate-limited':
        return envelope(res, 429, 'rate_limited', 'Too many requests', rule.retryAfter ?? '1');
      case 'unavailable':
        return envelope(res, 503, 'service_unavailable', 'Try again later', rule.retryAfter ?? '1');
      case 'lie': {
        const lie = rule.answer ?? { body: '' };
        return void res.writeHead(lie.status ?? 200, lie.headers ?? {}).end(lie.body);
      }
      case 'redirect':
        return void res.writeHead(302, { location: rule.location ?? 'http://127.0.0.1:9/elsewhere' }).end();
      case 'control': {
        const genuine = await upstreamAnswer(req, body);
        return void res
          .writeHead(genuine.status, { 'content-type': genuine.contentType })
          .end(withControls(genuine.body, genuine.contentType, rule.controlText ?? CONTROL_TEXT));
      }
      case undefined: {
        const genuine = await upstreamAnswer(req, body);
        return void res.writeHead(genuine.status, genuine.headers).end(genuine.body);
      }
    }
  }

  async function upstreamAnswer(req: IncomingMessage, body: Buffer) {
    if (options.upstream === undefined) {
      const text = JSON.stringify({ error: { code: 'not_found', message: 'No such path', details: {} } });
      return {
        status: 404,
        contentType: 'application/json',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(text),
      };
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string' && !HOP_BY_HOP.includes(name)) headers[name] = value;
    const method = req.method ?? 'GET';
    const upstream = await fetch(options.upstream + (req.url ?? '/'), {
      method,
      headers,
      redirect: 'manual',
      ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
    });
    const passed: Record<string, string> = {};
    for (const name of ['content-type', 'retry-after', 'location', 'cache-control'])
      if (upstream.headers.has(name)) passed[name] = upstream.headers.get(name)!;
    return {
      status: upstream.status,
      contentType: upstream.headers.get('content-type') ?? 'application/octet-stream',
      headers: passed,
      body: Buffer.from(await upstream.arrayBuffer()),
    };
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    statuses: (path) => requests.filter((r) => matches(path, r.url.split('?')[0]!)).map((r) => r.status),
    misbehave: set,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function envelope(res: ServerResponse, status: number, code: string, message: string, retryAfter: string) {
  res
    .writeHead(status, { 'content-type': 'application/json', 'retry-after': retryAfter })
    .end(JSON.stringify({ error: { code, message, details: {} } }));
}

/** A body that never ends, one byte at a time, until the client goes away. */
function drip(res: ServerResponse, everyMs: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const text = '{"ok":true,"proofs":[' + ' '.repeat(1_000_000);
  let at = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(text[at++ % text.length]!);
  }, everyMs);
  res.once('close', () => clearInterval(timer));
}

/** `total` bytes as fast as the client reads them, stopping when it goes away. */
function huge(res: ServerResponse, total: number): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  const more = () => {
    while (sent < total && !res.destroyed) {
      const piece = chunk.subarray(0, Math.min(chunk.length, total - sent));
      sent += piece.length;
      if (!res.write(piece)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end('"}');
  };
  res.write('{"ok":true,"padding":"');
  more();
}

/** The genuine answer with `controls` added to each string of a JSON body, or to the whole of another. */
function withControls(body: Buffer, contentType: string, controls: string): Buffer {
  if (!contentType.includes('json')) return Buffer.concat([body, Buffer.from(controls)]);
  const spoil = (value: unknown): unknown => {
    if (typeof value === 'string') return value + controls;
    if (Array.isArray(value)) return value.map(spoil);
    if (typeof value === 'object' && value !== null)
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, spoil(v)]));
    return value;
  };
  return Buffer.from(JSON.stringify(spoil(JSON.parse(body.toString('utf8')))));
}
