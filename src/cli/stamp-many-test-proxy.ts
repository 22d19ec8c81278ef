/**
 * A counting proxy on loopback in front of a test service, for the tests of stamping many files: it
 * passes every request and answer on (the RateLimit fields too), records what it saw, and lets a test
 * step in: `hold(path)` forwards the next request to that path to the service but never answers the
 * client (a service that stops answering midway), `delay` keeps an answer back until a promise settles;
 * both name the request by its method, path and its rank among the requests to that path (1: the first).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface SeenRequest {
  method: string;
  path: string;
  status: number;
  /** For a batch: how many items it carried. */
  items?: number;
}

export interface CountingProxy {
  url: string;
  seen: SeenRequest[];
  /** Forwards the `nth` request to `path`, then never answers it; resolves once it has been forwarded. */
  hold(method: string, path: string, nth: number): Promise<void>;
  /** Changes the body of every answer from now on (a log serving tiles not its own). */
  alter(alteration: (path: string, body: Buffer) => Buffer): void;
  /** Keeps the answer to the `nth` request to `path` back until `until()` resolves. */
  delay(method: string, path: string, nth: number, until: () => Promise<unknown>): void;
  close(): Promise<void>;
}

/** Headers of one connection, not passed on. */
const HOP_BY_HOP = new Set(['host', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

export async function startCountingProxy(upstream: string): Promise<CountingProxy> {
  const seen: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const holds: { key: string; forwarded: () => void }[] = [];
  const delays: { key: string; until: () => Promise<unknown> }[] = [];
  const counts = new Map<string, number>();
  let alteration = (_path: string, body: Buffer) => body;
  const take = <T extends { key: string }>(list: T[], key: string): T | undefined => {
    const at = list.findIndex((entry) => entry.key === key);
    return at < 0 ? undefined : list.splice(at, 1)[0];
  };

  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0]!;
      const entry: SeenRequest = { method, path, status: 0 };
      const rank = (counts.get(`${method} ${path}`) ?? 0) + 1;
      counts.set(`${method} ${path}`, rank);
      const key = `${method} ${path} ${rank}`;
      if (method === 'POST' && path === '/api/proof/batch')
        entry.items = (JSON.parse(body.toString('utf8')) as { items: unknown[] }).items.length;
      seen.push(entry);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
      const answer = await fetch(upstream + (req.url ?? '/'), {
        method,
        headers,
        redirect: 'manual',
        ...(method === 'GET' || method === 'HEAD' ? {} : { body }),
      });
      const bytes = alteration(path, Buffer.from(await answer.arrayBuffer()));
      const held = take(holds, key);
      if (held !== undefined) return held.forwarded();
      await take(delays, key)?.until();
      const passed: Record<string, string> = {};
      answer.headers.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name) && name !== 'content-encoding') passed[name] = value;
      });
      entry.status = answer.status;
      res.writeHead(answer.status, passed).end(bytes);
    })().catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    hold: (method, path, nth) =>
      new Promise((forwarded) =>
        holds.push({ key: `${method} ${path} ${nth}`, forwarded: () => forwarded() }),
      ),
    alter: (next) => void (alteration = next),
    delay: (method, path, nth, until) => void delays.push({ key: `${method} ${path} ${nth}`, until }),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
