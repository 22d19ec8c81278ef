/**
 * How the client reads what a service answers, trusting no byte of it (docs/cli.md, "A service that misbehaves"): every answer
 * within a total time, every body within a cap, read as a stream and cancelled the moment it passes
 * the cap, a service's request to wait (`Retry-After`) honoured only up to a bound, and an answer of
 * the wrong form refused; what goes wrong is a `HashproofError`.
 */

/**
 * An error answered by the service (its error envelope), or a request that got no usable answer
 * (`status` 0): `network_error`, `timeout`, `answer_too_large`, `malformed_answer`.
 */
export class HashproofError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'HashproofError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
  /** No usable answer came back: the network failed, the time ran out, or the answer was unusable. */
  get isNetworkError(): boolean {
    return this.status === 0;
  }
  /**
   * The service did not answer the question (no usable answer, a 429 or a 5xx after the retries): what
   * was asked could not be checked, which says nothing against a proof or a log (exit code 3).
   */
  get couldNotCheck(): boolean {
    return this.status === 0 || this.status === 429 || this.status === 408 || this.status >= 500;
  }
}

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

/** A successful answer as asked for; a JSON answer that does not parse, or fails `isValid`, is malformed. */
export function parseAnswer<T>(
  bytes: Buffer,
  as: 'json' | 'text' | 'bytes',
  isValid: ((answer: unknown) => boolean) | undefined,
  request: string,
): T {
  if (as === 'bytes') return bytes as T;
  if (as === 'text') return bytes.toString('utf8') as T;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new HashproofError(0, 'malformed_answer', `${request}: the answer is not JSON`);
  }
  if (isValid !== undefined && !isValid(parsed))
    throw new HashproofError(0, 'malformed_answer', `${request}: the answer is not of the expected form`);
  return parsed as T;
}

/** The error of an answer that is not a success: its envelope when it has one. */
export function errorOf(response: Response, bytes: Buffer, method: string, path: string): HashproofError {
  let envelope: { code?: unknown; message?: unknown; details?: unknown } | undefined;
  try {
    envelope = (JSON.parse(bytes.toString('utf8')) as { error?: typeof envelope }).error;
  } catch {
    envelope = undefined;
  }
  const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
  const details = envelope?.details;
  return new HashproofError(
    response.status,
    text(envelope?.code) ?? `http_${response.status}`,
    text(envelope?.message) ?? `${method} ${path} answered ${response.status}`,
    typeof details === 'object' && details !== null && !Array.isArray(details)
      ? (details as Record<string, unknown>)
      : {},
  );
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const isProofPage = (answer: unknown) =>
  isObject(answer) && Array.isArray(answer.proofs) && answer.proofs.every(isObject);
export const isStringArray = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string');
