/** HTTP from a chosen source address, to the service on 127.0.0.1. */
import http from 'node:http';
import { sleep } from '../lib/service.ts';
import type { AttackRequest } from './attacks.ts';

/** The measuring client's source address; the service listens on it too. */
export const CLIENT_ADDRESS = '127.0.0.1';
/** The attacker's source address: another client for the rate limit, the same loopback interface. */
export const ATTACKER_ADDRESS = '127.0.0.2';
/** After the phases, each attack request is timed alone from this address (its own allowance). */
export const ALONE_ADDRESS = '127.0.0.3';
/** A request unanswered after this long counts as an error (the service's own request timeout is 30 s). */
const REQUEST_TIMEOUT_MS = 35_000;

export interface Target {
  port: number;
  localAddress: string;
  agent: http.Agent;
}

export interface Answer {
  /** The status code; 0 when no answer came (connection error or timeout). */
  status: number;
  ms: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request; resolves (never rejects) once the whole answer is read or the request failed. */
export function send(target: Target, request: AttackRequest, keepBody = false): Promise<Answer> {
  return new Promise((resolve) => {
    const started = performance.now();
    const headers: http.OutgoingHttpHeaders = { ...request.headers };
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
export async function steady(
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
