import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Tsa } from '../src/tsa/tsa.ts';
import { Arrivals } from './wait.ts';

/**
 * An RFC 3161 authority on loopback that misbehaves, one way per mode. Its tokens are genuine RFC 3161
 * tokens over what it is asked (signed by a time-stamping key of its own, as the service's own TSA
 * makes them), so only the misbehaviour can be the reason one is refused:
 *
 * - `ok`: answers at the time it is; `dated`: answers with the genTime `datedAt` (1990, 2099 …);
 * - `hang`: never answers; `drip`: answers a byte a second; `huge`: answers 10 MB;
 *   `malformed`: answers bytes that are no TimeStampResp; `redirect`: answers 302 to `redirectTo`.
 *
 * Every request is recorded with its path (query included), authorization header and how many requests
 * were hanging then at every authority sharing `hub` with this one.
 */
export type HostileAuthorityMode = 'ok' | 'dated' | 'hang' | 'drip' | 'huge' | 'malformed' | 'redirect';

export interface HostileAuthority {
  url: string;
  mode: HostileAuthorityMode;
  datedAt: Date;
  redirectTo: string;
  requests: Arrivals<{ path: string; authorization?: string; hangingAtArrival: number }>;
  /** Answers every hanging request 503 now. */
  release(): void;
  close(): Promise<void>;
}

/** What authorities started with one hub count together: the requests hanging at them. */
export interface AuthorityHub {
  hanging: number;
}

export async function startHostileAuthority(
  mode: HostileAuthorityMode,
  hub: AuthorityHub = { hanging: 0 },
): Promise<HostileAuthority> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hostile-tsa-'));
  // Its key and certificates are made when it first signs (the modes that never do start faster).
  let tsa: Promise<Tsa> | undefined;
  const signer = () => (tsa ??= Tsa.open(dir, 'hostile.example'));
  const open = new Set<ServerResponse>();
  const hanging = new Set<ServerResponse>();
  const authority: HostileAuthority = {
    url: '',
    mode,
    datedAt: new Date('1990-01-01T00:00:00Z'),
    redirectTo: 'http://127.0.0.1:9/',
    requests: new Arrivals(),
    release: () => {
      for (const res of hanging) {
        hub.hanging--;
        res.writeHead(503, { 'content-type': 'text/plain' }).end('released');
      }
      hanging.clear();
    },
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      authority.requests.add({
        path: req.url ?? '',
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        hangingAtArrival: hub.hanging,
      });
      const reply = (body: Buffer) =>
        res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(body);
      switch (authority.mode) {
        case 'ok':
          return reply((await signer()).respond(Buffer.concat(chunks), new Date()));
        case 'dated':
          return reply((await signer()).respond(Buffer.concat(chunks), authority.datedAt));
        case 'hang':
          open.add(res);
          hanging.add(res);
          hub.hanging++;
          res.on('close', () => {
            if (hanging.delete(res)) hub.hanging--;
          });
          return;
        case 'drip': {
          open.add(res);
          res.writeHead(200, { 'content-type': 'application/timestamp-reply' });
          const timer = setInterval(() => res.write(Buffer.from([0x30])), 1_000);
          res.on('close', () => clearInterval(timer));
          return;
        }
        case 'huge':
          return reply(Buffer.alloc(10 * 1024 * 1024, 0x30));
        case 'malformed':
          return reply(Buffer.from('not a time-stamp reply'));
        case 'redirect':
          res.writeHead(302, { location: authority.redirectTo }).end();
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  authority.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return authority;
}
