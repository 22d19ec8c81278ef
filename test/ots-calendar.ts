import { createHash, randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  applyOp,
  chainTo,
  writeTimestamp,
  type OtsOp,
  type OtsTimestamp,
} from '../src/core/opentimestamps.ts';
import { Arrivals } from './wait.ts';

/**
 * An OpenTimestamps calendar on loopback, speaking the protocol as the public calendars do
 * (github.com/opentimestamps/opentimestamps-server, otsserver/rpc.py):
 *
 * - `POST /digest` with 1 to 64 raw bytes: 200, `application/octet-stream`, a timestamp of that digest
 *   that appends a 16-byte nonce, hashes, takes one Merkle aggregation step beside another submitter's
 *   digest, prepends the time and appends a MAC (as otsd's journal does), then ends in a pending
 *   attestation of this calendar's URL. The final message is the commitment.
 * - `GET /timestamp/{hex commitment}`: 404 while pending ("Pending confirmation in Bitcoin blockchain")
 *   or unknown ("Not found"), 400 for bad hex, and after `confirm()` 200 with the timestamp from the
 *   commitment through the calendar's Merkle tree, its Bitcoin transaction and the block's Merkle tree
 *   to the block's Merkle root, attested by a Bitcoin block header at the returned height.
 */
export interface Calendar {
  url: string;
  /** Every request once answered (or, for `down: 'hang'`, once it arrived with status 'hung'). */
  requests: Arrivals<{ method: string; path: string; status: number | 'hung' }>;
  /** Every digest accepted, with the commitment its reply ends in. */
  submissions: Arrivals<{ digest: Buffer; commitment: Buffer }>;
  /** The next `n` requests are answered 500. */
  failNext(n: number): void;
  /** 'error': every request is answered 500; 'hang': requests are never answered (until close). */
  down: false | 'error' | 'hang';
  /** Timestamps every pending commitment in a new block; the header's Merkle root is what they attest. */
  confirm(): { height: number; header: Buffer };
  close(): Promise<void>;
}

const FIRST_HEIGHT = 840_000;
const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();
const sha256d = (data: Buffer): Buffer => sha256(sha256(data));

/** A path per commitment from `leaves` to their common root, with the ops each one takes. */
interface Climb {
  msg: Buffer;
  members: OtsOp[][];
}

/** One level of a binary tree of `nodes`, pairing neighbours; `lone` says what happens to an odd last. */
function pairUp(
  nodes: Climb[],
  combine: (left: Buffer, right: Buffer) => Buffer,
  hashes: OtsOp[],
  lone: 'carry' | 'double',
): Climb[] {
  const next: Climb[] = [];
  for (let i = 0; i < nodes.length; i += 2) {
    const left = nodes[i]!;
    const right = nodes[i + 1] ?? (lone === 'double' ? { msg: left.msg, members: [] } : undefined);
    if (right === undefined) {
      next.push(left);
      continue;
    }
    for (const ops of left.members) ops.push({ op: 'append', arg: right.msg }, ...hashes);
    for (const ops of right.members) ops.push({ op: 'prepend', arg: left.msg }, ...hashes);
    next.push({ msg: combine(left.msg, right.msg), members: [...left.members, ...right.members] });
  }
  return next;
}

export async function startCalendar(): Promise<Calendar> {
  const pending: Buffer[] = [];
  const confirmed = new Map<string, OtsTimestamp>();
  const hung = new Set<ServerResponse>();
  let failures = 0;
  let confirmations = 0;

  const calendar: Calendar = {
    url: '',
    requests: new Arrivals(),
    submissions: new Arrivals(),
    down: false,
    failNext: (n) => {
      failures += n;
    },
    confirm,
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };

  function submit(digest: Buffer): Buffer {
    const sibling = randomBytes(32);
    const time = Buffer.alloc(4);
    time.writeUInt32BE(Math.floor(Date.now() / 1000));
    const ops: OtsOp[] = [
      { op: 'append', arg: randomBytes(16) },
      { op: 'sha256' },
      randomInt(2) === 0 ? { op: 'append', arg: sibling } : { op: 'prepend', arg: sibling },
      { op: 'sha256' },
      { op: 'prepend', arg: time },
      { op: 'append', arg: randomBytes(8) },
    ];
    const commitment = ops.reduce((msg, op) => applyOp(op, msg), digest);
    const reply = chainTo(digest, ops, [
      { msg: commitment, attestations: [{ kind: 'pending', uri: calendar.url }], ops: [] },
    ]);
    pending.push(commitment);
    calendar.submissions.add({ digest, commitment });
    return writeTimestamp(reply);
  }

  function confirm(): { height: number; header: Buffer } {
    const height = FIRST_HEIGHT + confirmations++;
    // The calendar's own tree over its commitments (each hashed first), as otsd aggregates them.
    let level: Climb[] = pending.map((commitment) => ({
      msg: sha256(commitment),
      members: [[{ op: 'sha256' }]],
    }));
    while (level.length > 1)
      level = pairUp(level, (l, r) => sha256(Buffer.concat([l, r])), [{ op: 'sha256' }], 'carry');
    const tip = level[0] ?? { msg: randomBytes(32), members: [] };
    // A transaction whose output carries the tip; its id is SHA-256d of its bytes.
    const prefix = Buffer.concat([
      Buffer.from('0100000001', 'hex'),
      randomBytes(41),
      Buffer.from('016a20', 'hex'),
    ]);
    const suffix = Buffer.from('00000000', 'hex');
    for (const ops of tip.members)
      ops.push(
        { op: 'prepend', arg: prefix },
        { op: 'append', arg: suffix },
        { op: 'sha256' },
        { op: 'sha256' },
      );
    const txid = sha256d(Buffer.concat([prefix, tip.msg, suffix]));
    // The block's transactions, ours among others, in Bitcoin's Merkle tree (an odd last is doubled).
    const txids: Climb[] = Array.from({ length: randomInt(1, 7) }, () => ({
      msg: randomBytes(32),
      members: [],
    }));
    txids.splice(randomInt(txids.length + 1), 0, { msg: txid, members: tip.members });
    let block = txids;
    while (block.length > 1)
      block = pairUp(
        block,
        (l, r) => sha256d(Buffer.concat([l, r])),
        [{ op: 'sha256' }, { op: 'sha256' }],
        'double',
      );
    const root = block[0]!.msg;

    const header = Buffer.alloc(80);
    header.writeInt32LE(0x20000000, 0);
    randomBytes(32).copy(header, 4);
    root.copy(header, 36);
    header.writeUInt32LE(Math.floor(Date.now() / 1000), 68);
    header.writeUInt32LE(0x17034219, 72);
    header.writeUInt32LE(randomInt(2 ** 32), 76);

    const attested: OtsTimestamp = { msg: root, attestations: [{ kind: 'bitcoin', height }], ops: [] };
    pending.forEach((commitment, i) => {
      confirmed.set(commitment.toString('hex'), chainTo(commitment, tip.members[i]!, [attested]));
    });
    pending.length = 0;
    return { height, header };
  }

  function answer(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: Buffer | string,
    type = 'text/plain',
  ): void {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
    calendar.requests.add({ method: req.method ?? '', path: req.url ?? '', status });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let length = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length <= 1024) chunks.push(chunk);
    }
    if (calendar.down === 'hang') {
      hung.add(res);
      calendar.requests.add({ method: req.method ?? '', path: req.url ?? '', status: 'hung' });
      return;
    }
    if (calendar.down === 'error' || failures > 0) {
      failures = Math.max(0, failures - 1);
      return answer(req, res, 500, 'calendar unavailable');
    }
    const url = req.url ?? '';
    if (req.method === 'POST' && url === '/digest') {
      if (length < 1 || length > 64)
        return answer(req, res, 400, length > 64 ? 'digest too long' : 'digest missing');
      return answer(req, res, 200, submit(Buffer.concat(chunks)), 'application/octet-stream');
    }
    const commitment = /^\/timestamp\/(.*)$/.exec(url)?.[1];
    if (req.method === 'GET' && commitment !== undefined) {
      if (!/^(?:[0-9a-f]{2})+$/i.test(commitment))
        return answer(req, res, 400, 'commitment must be hex-encoded bytes');
      const upgrade = confirmed.get(commitment.toLowerCase());
      if (upgrade !== undefined)
        return answer(req, res, 200, writeTimestamp(upgrade), 'application/octet-stream');
      const waiting = pending.some((c) => c.toString('hex') === commitment.toLowerCase());
      return answer(req, res, 404, waiting ? 'Pending confirmation in Bitcoin blockchain' : 'Not found');
    }
    return answer(req, res, 404, 'not found');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.destroy(error as Error);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  calendar.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return calendar;
}
