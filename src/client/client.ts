import type { ClientEvmSigner } from '@x402/evm';
import { tilePath } from '../core/tlog-tiles.ts';
import type { ProofAnchors } from '../verify/anchor-checks.ts';
import { adminCalls, encodeId, type Call } from './admin-calls.ts';
import { verifyOffline, type Evidence, type ManifestKey } from './offline.ts';

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
export { KeyManifestChangedError, KeyMemory, originOf } from './key-memory.ts';
export { writeFileAtomic } from './atomic-file.ts';
export { auditEntries } from './log-audit.ts';
export {
  defaultStateDir,
  LogCheckError,
  LogMemory,
  type ConsistencyProver,
  type Observation,
  type Remembered,
} from './log-memory.ts';
export { describeCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
export { checkAnchors, type AnchorCheck, type ProofAnchors } from '../verify/anchor-checks.ts';
export { certificatesOfPem } from '../verify/external-token.ts';

/** An error answered by the service (its error envelope), or a network failure (`status` 0). */
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
  get isNetworkError(): boolean {
    return this.status === 0;
  }
}

export interface Proof {
  id: string;
  verified: boolean;
  timestamp: string;
  contentHash: string;
  label: string;
  metadataHash: string;
  metadataKeys: string[];
  signature: string;
  keyId: string;
  accountId: string | null;
  payment: { network: string; payer: string; transaction: string; amount: string } | null;
  receipt: { keyId: string; signature: string } | null;
  /** Path of the RFC 3161 token (absent or null on proofs made before tokens existed). */
  timestampToken?: string | null;
  /** The proof's place in the transparency log, once integrated. */
  log?: { origin: string; leafIndex: number } | null;
}

export interface NotarizeInput {
  contentHash: string;
  label: string;
  metadata?: Record<string, unknown>;
  idempotencyKey: string;
}

export interface NotarizeResult {
  ok: boolean;
  mode: 'demo' | 'x402';
  idempotentReplay: boolean;
  proof: Proof;
  links: { proof: string; verify: string };
}

export interface ProofPage {
  ok: boolean;
  proofs: Proof[];
  limit: number;
  nextCursor: string | null;
}

export interface SearchParams {
  q?: string;
  contentHash?: string;
  metadataHash?: string;
  accountId?: string;
  idempotencyKey?: string;
  limit?: number;
  cursor?: string;
}

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
   * Attempts for a request that failed on the network or with a 5xx (default 3). Only requests safe to
   * send twice are tried again: GETs, notarize (its idempotency key makes a repeat return the same
   * proof) and revoke; an administrator's create or a webhook test is tried once.
   */
  attempts?: number;
}

/**
 * A typed client of the hashproof HTTP API. Safe retries: only idempotent requests are tried again, and
 * a notarize retry reuses its idempotency key.
 */
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

  /**
   * One request. Only a request that is safe to send twice (`isIdempotent`: a GET, a notarize carrying
   * its idempotency key, a revoke) is tried again after a network error or a 5xx: a create whose answer
   * was lost may have been done, and sending it again would do it twice.
   */
  const call: Call = async function call<T>(
    method: string,
    path: string,
    { body, headers = {}, isIdempotent = method === 'GET', as = 'json' }: CallOptions = {},
  ): Promise<T> {
    let lastError: HashproofError | undefined;
    for (let attempt = 1; attempt <= (isIdempotent ? attempts : 1); attempt++) {
      if (attempt > 1) await pause(attempt - 1);
      let response: Response;
      let bytes: Buffer;
      let text: string;
      try {
        response = await doFetch(base + path, {
          method,
          headers: {
            accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        // The connection can also break while the answer's body arrives.
        bytes = Buffer.from(await response.arrayBuffer());
        text = bytes.toString('utf8');
      } catch (error) {
        lastError = new HashproofError(
          0,
          'network_error',
          `cannot reach ${base}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error)}`,
        );
        continue;
      }
      if (response.ok && as !== 'json') return (as === 'text' ? text : bytes) as T;
      let parsed: unknown;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (response.ok) return parsed as T;
      const envelope = (
        parsed as
          { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined
      )?.error;
      lastError = new HashproofError(
        response.status,
        envelope?.code ?? `http_${response.status}`,
        envelope?.message ?? `${method} ${path} answered ${response.status}`,
        envelope?.details ?? {},
      );
      if (response.status < 500) throw lastError;
    }
    throw lastError ?? new HashproofError(0, 'network_error', 'no attempt made');
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
  const keys = () => call<{ keys: ManifestKey[] }>('GET', '/.well-known/hashproof-keys.json');

  return {
    baseUrl: base,
    notarize: (input: NotarizeInput) =>
      call<NotarizeResult>('POST', '/api/proof/notarize', {
        body: input,
        headers: keyHeaders(),
        isIdempotent: true,
      }),
    getProof: (proofId: string) =>
      call<{ ok: boolean; proof: Proof; links: NotarizeResult['links'] }>(
        'GET',
        `/api/proofs/${id(proofId)}`,
      ),
    verify: (proofId: string) =>
      call<{
        ok: boolean;
        proofId: string;
        verified: boolean;
        checks: Record<string, { status: string; message: string }>;
        checkedAt: string;
      }>('GET', `/api/verify/proofs/${id(proofId)}`),
    keys,
    /**
     * The offline evidence of a proof: its RFC 3161 token and TSA chain, and, once the proof is in the
     * log (waiting up to `waitMs` for it), its tlog-proof and the log's verifier key.
     */
    async evidence(proofId: string, waitMs = 3_000): Promise<Evidence> {
      const evidence: Evidence = {};
      const token = await doFetch(`${base}/api/proofs/${id(proofId)}/timestamp.tsr`);
      if (token.ok) {
        evidence.timestampToken = Buffer.from(await token.arrayBuffer()).toString('base64');
        evidence.tsaCertificates = await (await doFetch(`${base}/api/tsa/certs.pem`)).text();
      } else await token.arrayBuffer();
      const until = Date.now() + waitMs;
      for (;;) {
        const tlog = await doFetch(`${base}/api/proofs/${id(proofId)}/tlog-proof`);
        if (tlog.ok) {
          evidence.tlogProof = await tlog.text();
          const logKey = (await keys()).keys.find((k) => k.use === 'log')?.verifierKey;
          if (logKey !== undefined) evidence.logVerifierKey = logKey;
          return evidence;
        }
        await tlog.arrayBuffer();
        if (tlog.status !== 409 || Date.now() > until) return evidence;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    /**
     * The anchors of a proof (`/api/proofs/{id}/anchors`) with its OpenTimestamps file (`ots`, base64)
     * when a calendar has it; undefined while no anchored checkpoint holds the proof.
     */
    async anchors(proofId: string): Promise<ProofAnchors | undefined> {
      try {
        const anchors = await call<ProofAnchors>('GET', `/api/proofs/${id(proofId)}/anchors`);
        if (anchors.opentimestamps.length === 0) return anchors;
        const ots = await call<Buffer>('GET', `/api/proofs/${id(proofId)}/proof.ots`, { as: 'bytes' });
        return { ...anchors, ots: ots.toString('base64') };
      } catch (error) {
        if (error instanceof HashproofError && error.code === 'not_yet_anchored') return undefined;
        throw error;
      }
    },
    /** The log's latest checkpoint, a C2SP signed note (`/log/checkpoint`). */
    checkpoint: () => call<string>('GET', '/log/checkpoint', { as: 'text' }),
    /** The consistency proof between two tree sizes of the log (RFC 9162 §2.1.4). */
    async consistency(from: number, to: number): Promise<Buffer[]> {
      const proof = await call<{ hashes: string[] }>('GET', `/api/log/consistency${query({ from, to })}`);
      return proof.hashes.map((hash) => Buffer.from(hash, 'base64'));
    },
    /** A C2SP tile of the log: a hash tile of `level`, or an entry bundle, `width` entries wide. */
    tile: (level: number | 'entries', index: number, width: number) =>
      call<Buffer>('GET', `/log/tile/${tilePath(level, index, width)}`, { as: 'bytes' }),
    recent: (params: { limit?: number; cursor?: string } = {}) =>
      call<ProofPage>('GET', `/api/proofs/recent${query(params)}`),
    search: (params: SearchParams) => call<ProofPage>('GET', `/api/proofs/search${query(params)}`),
    verifyOffline,
    admin: adminCalls(call, options.adminKey),
  };
}

export type HashproofClient = ReturnType<typeof createClient>;

export interface CallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Safe to send twice; by default only a GET is. */
  isIdempotent?: boolean;
  /** How a successful answer is read: JSON (the default), text, or bytes (a Buffer). */
  as?: 'json' | 'text' | 'bytes';
}

function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 200 * 2 ** (attempt - 1)));
}
