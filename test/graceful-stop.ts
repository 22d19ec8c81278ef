import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { notarizeBody } from './helper.ts';
import { printed } from './process.ts';
import { within } from './wait.ts';

export interface DeferredPost {
  /** Settles when the server has taken the request: its 100 Continue arrived. */
  accepted: Promise<void>;
  /** Sends the body. */
  send(): void;
  /** The answer, or the socket error that ended the exchange instead. */
  answer: Promise<{ status: number; body: string } | { error: string }>;
}

/** A POST that sends its headers at once (Expect: 100-continue) and its body only when told to. */
export function deferredPost(url: string, body: string): DeferredPost {
  let accept = () => {};
  const accepted = new Promise<void>((resolve) => (accept = resolve));
  const req = request(url, {
    method: 'POST',
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue',
    },
  });
  req.on('continue', accept);
  const answer = new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
  req.flushHeaders();
  return { accepted, send: () => req.end(body), answer };
}

interface ProbeAnswer {
  status: number;
  headers: Record<string, string>;
  body: { error?: { code: string; details: Record<string, unknown> } };
}

/**
 * A `GET /health` begun now and finished when told, on a connection of its own: a connection whose
 * request has begun is busy, so a stopping server keeps it open (it closes idle ones), and the request
 * arrives during the drain, as a load balancer's probe on a kept-alive connection does.
 */
async function begunProbe(baseUrl: string): Promise<{ finish(): Promise<ProbeAnswer> }> {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect({ host: hostname, port: Number(port) });
  let raw = '';
  socket.on('data', (chunk: Buffer) => (raw += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset ends the exchange like a close
  const closed = once(socket, 'close');
  await once(socket, 'connect');
  await new Promise<void>((resolve) =>
    socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n', () => resolve()),
  );
  return {
    async finish() {
      socket.write('Accept: application/json\r\n\r\n');
      await within(closed, { what: 'the probe is answered and its connection closed', seen: () => raw });
      const end = raw.indexOf('\r\n\r\n');
      const [statusLine = '', ...lines] = raw.slice(0, Math.max(end, 0)).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(':')).toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
      );
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
      return {
        status,
        headers,
        body: end === -1 ? {} : (JSON.parse(raw.slice(end + 4)) as ProbeAnswer['body']),
      };
    },
  };
}

/** Every process below `pid`, from Linux's /proc (none once it has gone). */
export function descendants(pid: number): number[] {
  let children: string[];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean);
  } catch {
    return [];
  }
  return children.map(Number).flatMap((child) => [child, ...descendants(child)]);
}

/**
 * Stops a serving instance the way an orchestrator does, and asserts that it stopped cleanly: with
 * notarize requests held in flight (taken by the server, bodies not yet sent) and a `/health` probe
 * begun, SIGTERM goes to `child` alone; the probe, arriving during the drain, answers 503
 * `service_unavailable` with `details.reason` `shutting_down`; the process waits for the held requests,
 * answers each 200, exits 0, and leaves no process of its tree behind. `child` must print the service's
 * log (its "stopping" line). Resolves with how long the stop took after the last answer was released.
 */
export async function stopsGracefully(
  child: ChildProcess,
  baseUrl: string,
  options: { group?: boolean } = {},
): Promise<{ drainMs: number }> {
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const probe = await begunProbe(baseUrl);
  const held = Array.from({ length: 3 }, () =>
    deferredPost(`${baseUrl}/api/proof/notarize`, JSON.stringify(notarizeBody())),
  );
  await within(Promise.all(held.map((post) => post.accepted)), {
    what: 'the server takes the held requests',
  });
  const tree = [child.pid!, ...descendants(child.pid!)];
  const stopping = printed(child, 'stopping: finishing in-flight requests');
  // A process group's signal (a terminal's Ctrl-C, systemd's default KillMode) reaches every process of
  // the tree, the service included, besides what a parent passes on: the service gets it twice.
  if (options.group) process.kill(-child.pid!, 'SIGTERM');
  else child.kill('SIGTERM');
  await stopping;

  const health = await probe.finish();
  assert.equal(health.status, 503, JSON.stringify(health));
  assert.equal(health.body.error?.code, 'service_unavailable');
  assert.equal(health.body.error?.details.reason, 'shutting_down');
  assert.equal(health.headers['retry-after'], '1');
  // A probe on a new connection: the listening socket is closed, so it is refused (docs/deploy.md).
  const fresh = await fetch(`${baseUrl}/health`).then(
    async (response) => `${response.status} ${await response.text()}`,
    () => 'refused',
  );
  assert.ok(fresh === 'refused' || /^503 .*shutting_down/.test(fresh), fresh);
  assert.equal(child.exitCode, null, 'it waits for the requests in flight');

  const released = performance.now();
  for (const post of held) post.send();
  const answers = await within(Promise.all(held.map((post) => post.answer)), {
    what: 'the held requests are answered during the drain',
  });
  for (const answer of answers)
    assert.ok('status' in answer && answer.status === 200, JSON.stringify(answer));
  const [code, signal] = await within(exited, { what: 'the process exits after SIGTERM', timeoutMs: 30_000 });
  const drainMs = performance.now() - released;
  assert.equal(code, 0, `exit ${code ?? signal}`);
  for (const pid of tree) assert.ok(!existsSync(`/proc/${pid}`), `process ${pid} of its tree is gone`);
  return { drainMs };
}
