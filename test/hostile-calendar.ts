import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { applyOp, writeTimestamp, type OtsOp, type OtsTimestamp } from '../src/core/opentimestamps.ts';
import { Arrivals } from './wait.ts';

/**
 * An OpenTimestamps calendar on loopback that misbehaves, one way per mode:
 *
 * - `honest`: digests answered as a calendar does (pending at its own URL), upgrades 404 (pending);
 * - `elsewhere`: its answer to `POST /digest` is pending at another address (`elsewhereUri`, an
 *   `https://127.0.0.1:…` listener that counts every connection made to it);
 * - `many-pendings`: the answer leaves 220 pending attestations, none of which ever confirms;
 * - `hashing-cost`: the answer makes a reader hash kilobytes hundreds of times (Keccak branches) within
 *   the size a calendar answer may have;
 * - `claims-block`: digests are answered as an honest calendar would, and every upgrade claims Bitcoin
 *   block `claimedHeight` holds the commitment (its Merkle root is made up);
 * - `hang-upgrades`: digests are answered, upgrades (`GET /timestamp/…`) never are;
 * - `hang`: nothing is ever answered; `drip`: answers a byte a second; `huge`: answers 10 MB;
 *   `malformed`: answers bytes that are no timestamp; `redirect`: answers 302 to `elsewhereUri`.
 *
 * Every request is recorded as it arrives, with how many upgrade requests were hanging then.
 */
export type HostileCalendarMode =
  | 'honest'
  | 'elsewhere'
  | 'many-pendings'
  | 'hashing-cost'
  | 'claims-block'
  | 'hang-upgrades'
  | 'hang'
  | 'drip'
  | 'huge'
  | 'malformed'
  | 'redirect';

export interface HostileCalendar {
  url: string;
  mode: HostileCalendarMode;
  /** The block every upgrade claims in `claims-block` mode. */
  claimedHeight: number;
  /** Requests as they arrive: method, path with query, authorization header, and upgrades hanging then. */
  requests: Arrivals<{ method: string; path: string; authorization?: string; hangingUpgrades: number }>;
  /** An address of no calendar; every TCP connection to it is counted in `elsewhereConnections`. */
  elsewhereUri: string;
  elsewhereConnections: Arrivals<number>;
  close(): Promise<void>;
}

/** A timestamp of `msg` through `ops`, ending in `attestations`. */
function path(msg: Buffer, ops: OtsOp[], attestations: OtsTimestamp['attestations']): OtsTimestamp {
  const root: OtsTimestamp = { msg, attestations: [], ops: [] };
  let last = root;
  for (const op of ops) {
    const next: OtsTimestamp = { msg: applyOp(op, last.msg), attestations: [], ops: [] };
    last.ops.push({ op, next });
    last = next;
  }
  last.attestations.push(...attestations);
  return root;
}

export async function startHostileCalendar(mode: HostileCalendarMode): Promise<HostileCalendar> {
  const open = new Set<ServerResponse | Socket>();
  let hangingUpgrades = 0;

  const elsewhere = createTcpServer((socket) => {
    open.add(socket);
    calendar.elsewhereConnections.add(1);
    socket.on('error', () => undefined);
  });
  elsewhere.listen(0, '127.0.0.1');
  await once(elsewhere, 'listening');

  const calendar: HostileCalendar = {
    url: '',
    mode,
    claimedHeight: 1,
    requests: new Arrivals(),
    elsewhereUri: `https://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`,
    elsewhereConnections: new Arrivals(),
    close: async () => {
      for (const item of open) item.destroy();
      server.closeAllConnections();
      server.close();
      elsewhere.close();
      await Promise.all([once(server, 'close'), once(elsewhere, 'close')]);
    },
  };

  /** The answer to a digest: an honest calendar's shape, pending at `uri`. */
  const pendingAt = (digest: Buffer, uri: string) =>
    path(digest, [{ op: 'append', arg: randomBytes(16) }, { op: 'sha256' }], [{ kind: 'pending', uri }]);

  function digestAnswer(digest: Buffer): Buffer {
    switch (calendar.mode) {
      case 'elsewhere':
        return writeTimestamp(pendingAt(digest, calendar.elsewhereUri));
      case 'many-pendings': {
        const root: OtsTimestamp = { msg: digest, attestations: [], ops: [] };
        for (let i = 0; i < 220; i++) {
          const branch = path(
            digest,
            [{ op: 'append', arg: Buffer.from([i & 0xff, i >> 8]) }, { op: 'sha256' }],
            [{ kind: 'pending', uri: calendar.url }],
          );
          root.ops.push(...branch.ops);
        }
        return writeTimestamp(root);
      }
      case 'hashing-cost': {
        // One append makes a 4,000-byte message; each branch prepends a byte and hashes it with Keccak.
        const big: OtsOp = { op: 'append', arg: randomBytes(3968) };
        const wide = path(digest, [big], []);
        const node = wide.ops[0]!.next;
        for (let i = 0; i < 350; i++) {
          const branch = path(
            node.msg,
            [{ op: 'prepend', arg: Buffer.from([i & 0xff, i >> 8]) }, { op: 'keccak256' }],
            [{ kind: 'bitcoin', height: 1 }],
          );
          node.ops.push(...branch.ops);
        }
        return writeTimestamp(wide);
      }
      default:
        return writeTimestamp(pendingAt(digest, calendar.url));
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const url = req.url ?? '';
    const upgrade = req.method === 'GET' && url.startsWith('/timestamp/');
    calendar.requests.add({
      method: req.method ?? '',
      path: url,
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      hangingUpgrades,
    });
    const { mode } = calendar;
    if (mode === 'hang' || (mode === 'hang-upgrades' && upgrade)) {
      open.add(res);
      if (upgrade) hangingUpgrades++;
      res.on('close', () => {
        if (upgrade) hangingUpgrades--;
      });
      return;
    }
    if (mode === 'redirect') {
      res.writeHead(302, { location: `${calendar.elsewhereUri}${url}` }).end();
      return;
    }
    if (mode === 'drip') {
      open.add(res);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const timer = setInterval(() => res.write(Buffer.from([0xf0])), 1_000);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (mode === 'huge') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(10 * 1024 * 1024, 0xf0));
      return;
    }
    if (mode === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(randomBytes(64));
      return;
    }
    const route = url.split('?')[0]!;
    if (req.method === 'POST' && route.endsWith('/digest')) {
      const body = digestAnswer(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
      return;
    }
    const commitment = /\/timestamp\/([0-9a-f]+)$/.exec(route)?.[1];
    if (upgrade && commitment !== undefined && mode === 'claims-block') {
      // A made-up Merkle root: the commitment hashed once, "attested" by the claimed block.
      const claim = path(
        Buffer.from(commitment, 'hex'),
        [{ op: 'sha256' }],
        [{ kind: 'bitcoin', height: calendar.claimedHeight }],
      );
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(writeTimestamp(claim));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('Pending confirmation in Bitcoin blockchain');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => res.destroy(error as Error));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  calendar.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return calendar;
}
