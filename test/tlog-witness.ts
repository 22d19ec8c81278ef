import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cosign, generateCosignerKey } from '../src/core/cosignature.ts';
import { verifyConsistency } from '../src/core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../src/core/signed-note.ts';

/**
 * A witness written from C2SP tlog-witness alone, for tests: `POST /add-checkpoint` with 404 (unknown
 * origin), 403 (no signature by the log key), 400 (malformed, old > size), 409 (`text/x.tlog.size`,
 * the size it holds; or the same size with another root), 422 (a proof that does not verify, or a
 * proof with old 0), 200 with its cosignature line. Its state is one (size, root) per log, updated
 * before it answers. Tests can make it misbehave (`mode`) and read every request it got.
 */

export type WitnessMode =
  | 'honest'
  /** 200 with bytes that are no signature lines. */
  | 'garbage'
  /** 200 with a line of its key whose signature is over another checkpoint. */
  | 'bad-signature'
  /** Holds every request open until `release()`. */
  | 'hold'
  /** 503 to everything. */
  | 'down'
  /** 302 to a link-local address. */
  | 'redirect'
  /** 200 with 1 MiB of signature lines. */
  | 'huge';

export interface TestWitness {
  url: string;
  vkey: string;
  mode: WitnessMode;
  /** The (size, root) it holds for the log; undefined before its first cosignature. */
  state: { size: number; root: Buffer } | undefined;
  /** Every request: the old size and checkpoint size it carried, and the status answered. */
  requests: { old: number; size: number; status: number }[];
  /** The most requests it had open at once. */
  maxOpen: number;
  /** The Authorization header of each request (undefined when absent). */
  authorizations: (string | undefined)[];
  /** Resolves when a request arrives while it holds requests open. */
  held(): Promise<void>;
  /** Ends the held requests (503) and stops holding. */
  release(): void;
  close(): Promise<void>;
}

const MAX_BODY = 1 << 20;

export async function startTestWitness(logVkey: string, name = 'witness.test/w'): Promise<TestWitness> {
  const log = parseVerifierKey(logVkey);
  const key = generateCosignerKey(name);
  const holding: ServerResponse[] = [];
  let onHeld: (() => void) | undefined;
  const witness: TestWitness = {
    url: '',
    vkey: key.vkey,
    mode: 'honest',
    state: undefined,
    requests: [],
    authorizations: [],
    maxOpen: 0,
    held: () => new Promise<void>((resolve) => (onHeld = resolve)),
    release() {
      witness.mode = 'honest';
      for (const res of holding.splice(0)) res.writeHead(503).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        witness.release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  function answer(res: ServerResponse, status: number, body = '', type = 'text/plain'): void {
    res.writeHead(status, { 'content-type': type }).end(body);
  }

  function handle(req: IncomingMessage, res: ServerResponse, body: string): void {
    const seen = { old: -1, size: -1, status: 0 };
    witness.requests.push(seen);
    witness.authorizations.push(req.headers.authorization);
    const reply = (status: number, text = '', type?: string) => {
      seen.status = status;
      answer(res, status, text, type);
    };
    if (req.method !== 'POST' || req.url !== '/add-checkpoint') return reply(404);
    if (witness.mode === 'down') return reply(503, 'down for maintenance\n');
    if (witness.mode === 'redirect') {
      seen.status = 302;
      return void res.writeHead(302, { location: 'http://169.254.169.254/add-checkpoint' }).end();
    }
    // old line, proof lines, an empty line, then the checkpoint.
    const blank = body.indexOf('\n\n');
    const head = blank < 0 ? [] : body.slice(0, blank).split('\n');
    const old = /^old (0|[1-9]\d*)$/.exec(head[0] ?? '');
    if (old === null) return reply(400);
    seen.old = Number(old[1]);
    const proof = head.slice(1).map((line) => Buffer.from(line, 'base64'));
    if (proof.length > 63 || proof.some((hash) => hash.length !== 32)) return reply(400);
    const note = body.slice(blank + 2);
    let checkpoint;
    try {
      checkpoint = parseCheckpoint(note.slice(0, note.lastIndexOf('\n\n') + 1));
    } catch {
      return reply(400);
    }
    seen.size = checkpoint.size;
    if (checkpoint.origin !== log.name) return reply(404);
    let text: string;
    try {
      text = openNote(note, log);
    } catch {
      return reply(403);
    }
    if (seen.old > checkpoint.size) return reply(400);
    const held = witness.state ?? { size: 0, root: Buffer.alloc(0) };
    if (seen.old !== held.size) return reply(409, `${held.size}\n`, 'text/x.tlog.size');
    if (seen.old === 0 && proof.length > 0) return reply(422);
    if (seen.old === checkpoint.size && seen.old > 0) {
      if (!checkpoint.rootHash.equals(held.root)) return reply(409, `${held.size}\n`, 'text/x.tlog.size');
    } else if (
      seen.old > 0 &&
      !verifyConsistency(seen.old, checkpoint.size, held.root, checkpoint.rootHash, proof)
    ) {
      return reply(422);
    }
    if (witness.mode === 'hold') {
      seen.status = -1;
      holding.push(res);
      onHeld?.();
      return;
    }
    witness.state = { size: checkpoint.size, root: checkpoint.rootHash };
    const now = Math.floor(Date.now() / 1000);
    if (witness.mode === 'garbage') return reply(200, '<html>not a cosignature</html>');
    if (witness.mode === 'huge') return reply(200, `${cosign(text, now, key)}\n`.repeat(8_000));
    if (witness.mode === 'bad-signature') {
      const other = text.replace(`\n${checkpoint.size}\n`, `\n${checkpoint.size + 1}\n`);
      return reply(200, `${cosign(other, now, key)}\n`);
    }
    reply(200, `${cosign(text, now, key)}\n`);
  }

  let open = 0;
  const server = createServer((req, res) => {
    open++;
    witness.maxOpen = Math.max(witness.maxOpen, open);
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  witness.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return witness;
}
