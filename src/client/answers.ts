/**
 * How the client reads what a service answers, trusting no byte of it (DECISIONS.md §14): every answer
 * within a total time, every body within a cap, read as a stream and cancelled the moment it passes
 * the cap, and a service's request to wait (`Retry-After`) honoured only up to a bound.
 */

const MIB = 2 ** 20;

/**
 * The most a body may hold, by what it is. Over its cap, an answer is refused as soon as the cap is
 * passed (or at once, when its Content-Length says so), and the request fails with `answer_too_large`.
 */
export const ANSWER_CAPS = {
  /** Anything not named below: a proof, a page of proofs, an administrator's list, a TSA chain. */
  default: 16 * MIB,
  /** A C2SP signed note: origin, size, root and a few signature lines. */
  checkpoint: 64 * 2 ** 10,
  /** A tlog-proof: a checkpoint with at most 64 hashes of an audit path. */
  tlogProof: 64 * 2 ** 10,
  /** The key manifest: every key the service ever signed with, a few hundred bytes each. */
  keyManifest: 1 * MIB,
  /** A consistency proof: at most 64 hashes, base64, in JSON. */
  consistencyProof: 64 * 2 ** 10,
  /** A hash tile: at most 256 hashes of 32 bytes (C2SP tlog-tiles). */
  hashTile: 256 * 32,
  /** An entry bundle: 256 entries, each a proof's signing message of at most a few KiB. */
  entryBundle: 4 * MIB,
  /** An RFC 3161 TimeStampResp: a signature and a certificate chain. */
  timestampToken: 256 * 2 ** 10,
} as const;

/** The default total time of one request, from sending it to the last byte of its answer. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** The longest wait a service may ask for (`Retry-After`); a longer one is refused at once. */
export const RETRY_AFTER_MAX_SECONDS = 60;

/** Why a body could not be read: over the cap, or broken off (the caller's signal, a lost connection). */
export class AnswerTooLarge extends Error {
  readonly capBytes: number;
  constructor(capBytes: number) {
    super(`answer over ${capBytes} bytes`);
    this.capBytes = capBytes;
  }
}

/**
 * The body of an answer, read chunk by chunk and cancelled as soon as it passes `capBytes`; a
 * Content-Length over the cap is refused before a byte is read. Throws `AnswerTooLarge`.
 */
export async function readCapped(response: Response, capBytes: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > capBytes) {
    await response.body?.cancel().catch(() => {});
    throw new AnswerTooLarge(capBytes);
  }
  if (response.body === null) return Buffer.alloc(0);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > capBytes) {
      await reader.cancel().catch(() => {});
      throw new AnswerTooLarge(capBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

/**
 * The wait a 429 or 503 asks for, in milliseconds (RFC 9110 §10.2.3: delay seconds or an HTTP date);
 * undefined when it names none or cannot be read.
 */
export function retryAfterMs(header: string | null, nowMs = Date.now()): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
