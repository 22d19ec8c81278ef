import { connect } from 'node:net';
import { setTimeout as slowClientPause } from 'node:timers/promises';

export interface RawResponse {
  /** 0 when the connection closed before a status line arrived. */
  status: number;
  /** Header names lowercased. */
  headers: Record<string, string>;
  text: string;
  /** The body parsed, when it is JSON. */
  body: any;
  /** Milliseconds from the first byte sent until the server closed the connection. */
  elapsedMs: number;
}

/**
 * Sends bytes exactly as given on a connection of its own (what `fetch` refuses to send: NUL bytes in
 * headers, bad header names, stalled bodies), `pauseMs` apart, and reads until the server closes the
 * connection. Send `Connection: close` for a request the server answers normally.
 */
export function rawRequest(
  baseUrl: string,
  parts: (string | Buffer)[],
  options: { pauseMs?: number; timeoutMs?: number } = {},
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    const started = performance.now();
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${options.timeoutMs ?? 10_000} ms`));
    }, options.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {}); // a reset ends the exchange like a close
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks).toString('latin1'), performance.now() - started));
    });
    void (async () => {
      for (const [i, part] of parts.entries()) {
        // The slowness is what the test is about: a client that sends its request in pieces.
        if (i > 0 && options.pauseMs) await slowClientPause(options.pauseMs);
        if (socket.destroyed) return;
        socket.write(typeof part === 'string' ? Buffer.from(part, 'latin1') : part);
      }
    })();
  });
}

function parseResponse(raw: string, elapsedMs: number): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  const head = end === -1 ? raw : raw.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let payload = end === -1 ? '' : raw.slice(end + 4);
  if (headers['transfer-encoding'] === 'chunked') payload = dechunk(payload);
  const text = Buffer.from(payload, 'latin1').toString('utf8');
  let body: unknown;
  if (headers['content-type']?.includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status, headers, text, body, elapsedMs };
}

function dechunk(payload: string): string {
  let out = '';
  for (let at = 0; at < payload.length;) {
    const lineEnd = payload.indexOf('\r\n', at);
    const size = parseInt(payload.slice(at, lineEnd), 16);
    if (lineEnd === -1 || !(size > 0)) break;
    out += payload.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
  return out;
}

/**
 * The bytes of one request for `rawRequest`, ending with `Connection: close`: the body split into
 * `pieces` parts (sent `pauseMs` apart), framed by Content-Length or, with `chunked`, as chunks.
 */
export function requestParts(
  method: string,
  target: string,
  options: { headers?: [string, string | Buffer][]; body?: Buffer; pieces?: number; chunked?: boolean } = {},
): Buffer[] {
  const body = options.body ?? Buffer.alloc(0);
  const lines = [Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n`, 'latin1')];
  for (const [name, value] of options.headers ?? []) {
    lines.push(Buffer.from(`${name}: `, 'latin1'), Buffer.from(value), Buffer.from('\r\n'));
  }
  const framing = options.chunked
    ? 'Transfer-Encoding: chunked\r\n'
    : body.length > 0
      ? `Content-Length: ${body.length}\r\n`
      : '';
  lines.push(Buffer.from(`${framing}Connection: close\r\n\r\n`, 'latin1'));
  const pieces = Math.max(1, Math.min(options.pieces ?? 1, body.length));
  const size = Math.ceil(body.length / pieces);
  const parts: Buffer[] = [Buffer.concat(lines)];
  for (let at = 0; at < body.length; at += size) {
    const piece = body.subarray(at, at + size);
    parts.push(
      options.chunked
        ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])
        : piece,
    );
  }
  if (options.chunked) parts.push(Buffer.from('0\r\n\r\n'));
  return parts;
}
