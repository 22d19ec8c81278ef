import type { ClientEvmSigner } from '@x402/evm';
import { BATCH_PATH, NOTARIZE_PATH } from '../core/api-paths.ts';
import { adminCalls } from './admin-calls.ts';
import { logCalls } from './log-calls.ts';
import { proofEvidenceCalls } from './evidence-calls.ts';
import { encodeId, type Call, type CallOptions } from './call.ts';
import {
  ANSWER_CAPS,
  AnswerTooLarge,
  DEFAULT_TIMEOUT_MS,
  errorOf,
  HashproofError,
  isObject,
  isProofPage,
  parseAnswer,
  readCapped,
  retryAfterMs,
  RETRY_AFTER_MAX_SECONDS,
} from './answers.ts';
import { verifyOffline, type ManifestKey } from './offline.ts';
import { RateBudget } from './stamp-many-pacing.ts';
import type {
  BatchResult,
  NotarizeInput,
  NotarizeResult,
  Proof,
  ProofPage,
  SearchParams,
} from './documents.ts';

export {
  hashFile,
  hashStream,
  logKeyOf,
  manifestKeysOf,
  parseProofFile,
  proofFileOf,
  verifyOffline,
  verifyProofFile,
  type Content,
  type Evidence,
  type FileVerdict,
  type ManifestKey,
  type OfflineCheck,
  type ProofFile,
  type PublicKeyEntry,
} from './offline.ts';
export {
  aggregate,
  aggregatedOts,
  aggregationMetadata,
  aggregationOrder,
  AggregationError,
  type AggregatedProofFile,
  type AggregateInput,
  type AggregateResult,
  type AggregationPath,
} from './aggregate.ts';
export { KeyManifestChangedError, KeyMemory, originOf } from './key-memory.ts';
export {
  countCosignatures,
  describeCount,
  witnessChecks,
  witnessPolicy,
  WitnessPolicyError,
  type Witness,
  type WitnessCount,
  type WitnessPolicy,
} from './witness-quorum.ts';
export { awaitCosigned, bringUp, type CosignedWait, type CountedCheckpoint } from './witnessed-log.ts';
export { writeFileAtomic } from './atomic-file.ts';
export { auditEntries } from './log-audit.ts';
export { ANSWER_CAPS, DEFAULT_TIMEOUT_MS, HashproofError, RETRY_AFTER_MAX_SECONDS } from './answers.ts';
export {
  defaultStateDir,
  LogCheckError,
  LogMemory,
  LogUncheckedError,
  type ConsistencyProver,
  type Observation,
  type Remembered,
} from './log-memory.ts';
export { describeCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
export { checkAnchors, type AnchorCheck, type ProofAnchors } from '../verify/anchor-checks.ts';
export { certificatesOfPem } from '../verify/external-token.ts';

export type {
  BatchItem,
  BatchResult,
  NotarizeInput,
  NotarizeResult,
  Proof,
  ProofPage,
  SearchParams,
} from './documents.ts';
export { RateBudget, type RateLimitState } from './stamp-many-pacing.ts';
export {
  stampMany,
  type StampManyInput,
  type StampManyOptions,
  type StampManyResult,
  type StampedProof,
} from './stamp-many.ts';

export interface ClientOptions {
  baseUrl: string;
  /** Sent as X-Service-Key: proofs are created for the key's account, without payment. */
  apiKey?: string;
  /** Sent as X-Service-Admin-Key on administrator calls. */
  adminKey?: string;
  /**
   * A fetch that pays x402 challenges (for example `wrapFetchWithPayment` from `@x402/fetch`); plain
   * `fetch` by default, which surfaces a 402 as a HashproofError with code `payment_required`.
   */
  fetch?: typeof fetch;
  /**
   * A wallet that pays x402 challenges (USDC, `exact` scheme, EIP-3009): a viem local account such as
   * `privateKeyToAccount(key)`. The official `@x402/fetch` client signs each payment; the default spend
   * controls of that client apply (known USDC assets only, at most $1 per payment).
   */
  payer?: ClientEvmSigner;
  /**
   * Tries of a request (default 3). A request that got a 429 is tried again, after the wait its
   * `Retry-After` asks for (at most 60 s; a longer one is refused at once), since the service did not
   * handle it. After a network error, a timeout or a 5xx (a 503 also after its `Retry-After`), only a
   * request safe to send twice is tried again: GETs, notarize (its idempotency key makes a repeat
   * return the same proof) and revoke; an administrator's create or a webhook test is sent once.
   */
  attempts?: number;
  /**
   * The most time one try of a request may take, from sending it to the last byte of its answer
   * (default 30000). Connecting is bounded by it too (and by Node's own 10 s connect timeout).
   */
  timeoutMs?: number;
}

/**
 * A typed client of the hashproof HTTP API. Safe retries: only idempotent requests are tried again, and
 * a notarize retry reuses its idempotency key. Every request has a total timeout and every answer a
 * size cap (answers.ts).
 */
/** The official x402 client's default cap on one payment ($1), in atomic USDC units (6 decimals). */
const PAYMENT_CAP_UNITS = 1_000_000;

export function createClient(options: ClientOptions) {
  const base = options.baseUrl.replace(/\/+$/, '');
  const payer = options.payer;
  // The x402 client loads only when a wallet is given (it pulls in viem and the x402 SDK).
  const paying =
    payer === undefined
      ? undefined
      : Promise.all([import('@x402/fetch'), import('@x402/evm/exact/client')]).then(
          ([{ wrapFetchWithPayment, x402Client }, { ExactEvmScheme }]) =>
            wrapFetchWithPayment(fetch, new x402Client().register('eip155:*', new ExactEvmScheme(payer))),
        );
  const doFetch: typeof fetch =
    options.fetch ?? (paying ? async (input, init) => (await paying)(input, init) : fetch);
  const attempts = options.attempts ?? 3;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // What the service's RateLimit fields say is left, for callers that pace themselves (stampMany).
  const rateLimit = new RateBudget(sleep);
  let perPayment: Promise<number> | undefined;

  /**
   * One try: the answer's status, headers and body, read within `timeoutMs` and `capBytes`; a
   * `HashproofError` with status 0 when no usable answer came back.
   */
  async function send(
    method: string,
    path: string,
    init: { body?: string; headers: Record<string, string> },
    capBytes: number,
  ): Promise<{ response: Response; bytes: Buffer }> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const response = await doFetch(base + path, {
        method,
        headers: init.headers,
        // A hashproof service never redirects; following one would send the keys elsewhere.
        redirect: 'manual',
        signal,
        ...(init.body === undefined ? {} : { body: init.body }),
      });
      // The time and the cap hold while the body arrives too.
      return { response, bytes: await readCapped(response, capBytes) };
    } catch (error) {
      if (error instanceof AnswerTooLarge)
        throw new HashproofError(0, 'answer_too_large', `${method} ${path}: ${error.message}`, {
          capBytes: error.capBytes,
        });
      if (signal.aborted)
        throw new HashproofError(
          0,
          'timeout',
          `${base} did not answer ${method} ${path} within ${timeoutMs} ms`,
        );
      const cause =
        error instanceof Error
          ? ((error.cause as Error | undefined)?.message ?? error.message)
          : String(error);
      throw new HashproofError(0, 'network_error', `cannot reach ${base}: ${cause}`);
    }
  }

  /**
   * One request. A 429 is tried again after its `Retry-After` (the service did not handle it). After a
   * network error, a timeout or a 5xx, only a request that is safe to send twice (`isIdempotent`: a GET,
   * a notarize carrying its idempotency key, a revoke) is tried again: a create whose answer was lost may
   * have been done, and sending it again would do it twice.
   */
  const call: Call = async function call<T>(
    method: string,
    path: string,
    {
      body,
      headers = {},
      isIdempotent = method === 'GET',
      as = 'json',
      maxBytes = ANSWER_CAPS.default,
      isValid,
    }: CallOptions = {},
  ): Promise<T> {
    const init = {
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    };
    for (let attempt = 1; ; attempt++) {
      const isLast = attempt >= attempts;
      let answer: { response: Response; bytes: Buffer };
      try {
        answer = await send(method, path, init, maxBytes);
      } catch (error) {
        const isRetried =
          error instanceof HashproofError && error.code !== 'answer_too_large' && isIdempotent && !isLast;
        if (!isRetried) throw error;
        await pause(attempt);
        continue;
      }
      const { response, bytes } = answer;
      rateLimit.observe(response.headers);
      if (response.status >= 300 && response.status < 400)
        throw new HashproofError(
          0,
          'redirected',
          `${method} ${path} answered ${response.status}, a redirect${response.headers.has('location') ? ` to ${response.headers.get('location')}` : ''}: the client follows none`,
        );
      if (response.ok) return parseAnswer<T>(bytes, as, isValid, `${method} ${path}`);
      const error = errorOf(response, bytes, method, path);
      const isRetried = response.status === 429 || (response.status >= 500 && isIdempotent);
      if (!isRetried || isLast) throw error;
      const waitMs = retryAfterMs(response.headers.get('retry-after'));
      if (waitMs !== undefined && waitMs > RETRY_AFTER_MAX_SECONDS * 1000)
        throw new HashproofError(
          error.status,
          error.code,
          `${error.message} (the service asks to wait ${Math.ceil(waitMs / 1000)} s, over the ${RETRY_AFTER_MAX_SECONDS} s this client waits: try again later)`,
          error.details,
        );
      await (waitMs === undefined ? pause(attempt) : sleep(waitMs));
    }
  };

  const keyHeaders = (): Record<string, string> =>
    options.apiKey ? { 'x-service-key': options.apiKey } : {};
  const query = (params: object) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params))
      if (value !== undefined) search.set(key, String(value));
    const text = search.toString();
    return text ? `?${text}` : '';
  };
  const id = encodeId;

  /** The service's key manifest (`/.well-known/hashproof-keys.json`). */
  const keys = () =>
    call<{ keys: ManifestKey[] }>('GET', '/.well-known/hashproof-keys.json', {
      maxBytes: ANSWER_CAPS.keyManifest,
      isValid: (answer) => isObject(answer) && Array.isArray(answer.keys) && answer.keys.every(isObject),
    });
  const isProofAnswer = (answer: unknown) => isObject(answer) && isObject(answer.proof);

  return {
    baseUrl: base,
    notarize: (input: NotarizeInput) =>
      call<NotarizeResult>('POST', NOTARIZE_PATH, {
        body: input,
        headers: keyHeaders(),
        isIdempotent: true,
        isValid: (answer) => isProofAnswer(answer) && isObject((answer as { links?: unknown }).links),
      }),
    /**
     * Many proofs in one request (`POST /api/proof/batch`, 1 to 1,000 items): the answer holds one
     * item per input, in order, each a proof or the error that item alone met. Safe to send again: each
     * item's idempotency key returns the proof already made. It counts ceil(items / 100) requests
     * against the rate limit (`rateLimit.pace` before it keeps it from being refused).
     */
    batch: (items: NotarizeInput[]) =>
      call<BatchResult>('POST', BATCH_PATH, {
        body: { items },
        headers: keyHeaders(),
        isIdempotent: true,
        isValid: (answer) =>
          isObject(answer) &&
          Array.isArray(answer.items) &&
          answer.items.length === items.length &&
          answer.items.every(isObject),
      }),
    /** The service's rate limit as its answers told it; `pace(cost)` waits before the limit is met. */
    rateLimit,
    /**
     * How many proofs one payment may buy: undefined without a wallet; with one, as many as the x402
     * client's spend control lets one payment carry ($1 by default) at the service's price, read once
     * from its `/.well-known/x402`. A batch of more would be refused by the wallet's own client.
     */
    async itemsPerPayment(): Promise<number | undefined> {
      if (payer === undefined) return undefined;
      perPayment ??= call<{ items?: { accepts?: { amount?: unknown }[] }[] }>('GET', '/.well-known/x402', {
        isValid: isObject,
      }).then((terms) => {
        const amount = terms.items?.[0]?.accepts?.[0]?.amount;
        if (typeof amount !== 'string' || !/^[1-9]\d{0,20}$/.test(amount)) return 1;
        // USDC has 6 decimals: the $1 cap is 1,000,000 atomic units.
        return Math.max(1, Math.floor(PAYMENT_CAP_UNITS / Number(amount)));
      });
      return perPayment;
    },
    getProof: (proofId: string) =>
      call<{ ok: boolean; proof: Proof; links: NotarizeResult['links'] }>(
        'GET',
        `/api/proofs/${id(proofId)}`,
        { isValid: isProofAnswer },
      ),
    verify: (proofId: string) =>
      call<{
        ok: boolean;
        proofId: string;
        verified: boolean;
        checks: Record<string, { status: string; message: string }>;
        checkedAt: string;
      }>('GET', `/api/verify/proofs/${id(proofId)}`, {
        isValid: (answer) => isObject(answer) && typeof answer.verified === 'boolean',
      }),
    keys,
    ...proofEvidenceCalls(call, keys),
    ...logCalls(call),
    recent: (params: { limit?: number; cursor?: string } = {}) =>
      call<ProofPage>('GET', `/api/proofs/recent${query(params)}`, { isValid: isProofPage }),
    search: (params: SearchParams) =>
      call<ProofPage>('GET', `/api/proofs/search${query(params)}`, { isValid: isProofPage }),
    verifyOffline,
    admin: adminCalls(call, options.adminKey),
  };
}

export type HashproofClient = ReturnType<typeof createClient>;

/** The wait before the next try when the service named none: 200 ms, then 400 ms, … */
function pause(attempt: number): Promise<void> {
  return sleep(200 * 2 ** (attempt - 1));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
