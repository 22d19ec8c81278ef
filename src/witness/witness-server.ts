import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { CosignerKey } from '../core/cosignature.ts';
import { GateFullError, SerialGate } from '../core/serial-gate.ts';
import type { NoteVerifier } from '../core/signed-note.ts';
import { checkSubmission, cosignSubmission, refusal, type Answer } from './add-checkpoint.ts';
import type { WitnessState } from './witness-state.ts';

/**
 * The witness over HTTP (node:http: the protocol is a few plain-text answers fixed by C2SP
 * tlog-witness, not the service's JSON API):
 * - `POST /add-checkpoint`: checked by add-checkpoint.ts; one request at a time per origin, the check
 *   of `old` and the storing of the new checkpoint under the same turn, so no two requests can roll
 *   the record back; the record is on disk before the cosignature is answered.
 * - `GET /<SHA-256 of the origin, hex>/checkpoint`: the latest checkpoint cosigned, for monitors.
 * Anything else is 404 (405 for another method on a known path). A body over `MAX_BODY_BYTES` is 413.
 */

/** A checkpoint with its signatures (at most 64 lines), 63 proof lines and the old line fit well within. */
export const MAX_BODY_BYTES = 256 * 1024;
/** Requests of one origin waiting their turn; more are answered 503. */
const MAX_WAITING = 32;

export interface WitnessOptions {
  key: CosignerKey;
  logs: ReadonlyMap<string, readonly NoteVerifier[]>;
  state: WitnessState;
  /** POSIX seconds, the cosignatures' timestamp. */
  now?: () => number;
  /** Told of each cosignature and each failure to store one (one line, no secrets). */
  log?: (line: string) => void;
}

function send(response: ServerResponse, answer: Answer, extraHeaders: Record<string, string> = {}): void {
  const body = Buffer.from(answer.body, 'utf8');
  response.writeHead(answer.status, {
    'content-type': answer.contentType,
    'content-length': String(body.length),
    'cache-control': 'no-store',
    ...extraHeaders,
  });
  response.end(body);
}

/** The body, or undefined once it passed the limit (then 413 was answered and the connection closes). */
function readBody(request: IncomingMessage, response: ServerResponse): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const declared = Number(request.headers['content-length'] ?? 0);
    const tooLarge = () => {
      send(response, refusal(413, `the request body is larger than ${MAX_BODY_BYTES} bytes`), {
        connection: 'close',
      });
      request.resume();
      resolve(undefined);
    };
    if (declared > MAX_BODY_BYTES) return tooLarge();
    const chunks: Buffer[] = [];
    let length = 0;
    let over = false;
    request.on('data', (chunk: Buffer) => {
      if (over) return;
      length += chunk.length;
      if (length > MAX_BODY_BYTES) {
        over = true;
        tooLarge();
        return;
      }
      chunks.push(chunk);
    });
    request.once('end', () => {
      if (!over) resolve(Buffer.concat(chunks));
    });
    request.once('error', reject);
  });
}

export function witnessServer(options: WitnessOptions): Server {
  const { key, logs, state } = options;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const gates = new Map([...logs.keys()].map((origin) => [origin, new SerialGate(MAX_WAITING)]));

  async function addCheckpoint(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readBody(request, response);
    if (body === undefined) return;
    const submission = checkSubmission(body, logs);
    if ('status' in submission) return send(response, submission);
    const gate = gates.get(submission.origin)!;
    let answer: Answer;
    try {
      answer = await gate.run(async () => {
        if (state.unavailable(submission.origin))
          return refusal(503, 'the record of this log could not be read; the witness needs a restart');
        const outcome = cosignSubmission(submission, state.latest(submission.origin), key, now());
        if ('status' in outcome) return outcome;
        try {
          await state.store(outcome.record);
        } catch (error) {
          options.log?.(
            `witness: could not store the checkpoint of ${JSON.stringify(submission.origin)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
          );
          return refusal(503, 'the checkpoint could not be stored; nothing was cosigned');
        }
        options.log?.(`witness: cosigned ${JSON.stringify(submission.origin)} at size ${submission.size}`);
        return outcome.answer;
      });
    } catch (error) {
      if (!(error instanceof GateFullError)) throw error;
      return send(response, refusal(503, 'too many requests for this log are waiting'), {
        'retry-after': '1',
      });
    }
    send(response, answer);
  }

  function handle(request: IncomingMessage, response: ServerResponse): Promise<void> | void {
    const url = request.url ?? '/';
    const pathname = url.split('?')[0];
    if (pathname === '/add-checkpoint') {
      if (request.method !== 'POST')
        return send(response, refusal(405, 'add-checkpoint takes a POST'), { allow: 'POST' });
      return addCheckpoint(request, response);
    }
    const monitor = /^\/([0-9a-f]{64})\/checkpoint$/.exec(pathname ?? '');
    if (monitor) {
      if (request.method !== 'GET' && request.method !== 'HEAD')
        return send(response, refusal(405, 'checkpoint takes a GET'), { allow: 'GET, HEAD' });
      const latest = state.latestByHash(monitor[1]!);
      if (latest === undefined) return send(response, refusal(404, 'no checkpoint cosigned for this log'));
      return send(response, { status: 200, contentType: 'text/plain; charset=utf-8', body: latest.note });
    }
    send(response, refusal(404, 'not found: this witness answers POST /add-checkpoint'));
  }

  const server = createServer((request, response) => {
    Promise.resolve()
      .then(() => handle(request, response))
      .catch(() => {
        // A bug or a broken connection: never a stack trace in the answer.
        if (!response.headersSent) send(response, refusal(500, 'internal error'));
        else response.destroy();
      });
  });
  server.requestTimeout = 60_000;
  server.headersTimeout = 30_000;
  server.maxHeadersCount = 64;
  return server;
}
