import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { isContentHash } from '../core/hashing.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { verifyReceipt } from '../core/receipt.ts';
import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { verifyTimestampToken } from '../tsa/verify-token.ts';
import type { ClientEvmSigner } from '@x402/evm';

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

/**
 * What checks a proof offline beyond its receipt, saved with it by `hashproof stamp`: the RFC 3161
 * token with the TSA chain, and the C2SP tlog-proof with the log's verifier key.
 */
export interface Evidence {
  /** The TimeStampResp, base64 DER. */
  timestampToken?: string;
  /** The TSA certificate followed by its root, PEM (the root is the trust anchor: compare it). */
  tsaCertificates?: string;
  /** The C2SP tlog-proof file. */
  tlogProof?: string;
  /** The log's C2SP verifier key (compare it with the service's key manifest). */
  logVerifierKey?: string;
}

/** An entry of the service's key manifest (`/.well-known/hashproof-keys.json`). */
export interface PublicKeyEntry {
  keyId: string;
  algorithm: string;
  publicKey: string;
  validFrom: string;
  validUntil: string | null;
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

/** `sha256:` + hex SHA-256 of a file, read as a stream (constant memory, whatever the size). */
export function hashFile(path: string, onProgress?: (bytes: number) => void): Promise<string> {
  return hashStream(createReadStream(path, { highWaterMark: 1 << 20 }), onProgress);
}

/** `sha256:` + hex SHA-256 of everything a stream yields; `onProgress` hears the bytes read so far. */
export async function hashStream(
  stream: AsyncIterable<unknown>,
  onProgress?: (bytes: number) => void,
): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  return 'sha256:' + hash.digest('hex');
}

export interface OfflineCheck {
  name: string;
  status: 'valid' | 'invalid' | 'unavailable';
  message: string;
}

/** A key of the manifest as the service publishes it, with its use and (for the log) its verifier key. */
export type ManifestKey = PublicKeyEntry & { use?: string; verifierKey?: string };

/**
 * Ties the evidence saved in a proof file to keys the verifier trusts (a copy of the service's key
 * manifest kept apart from the proof, or the manifest fetched from the service). Without it every key
 * would come from the proof file itself, and a forger who replaced all of them would pass. Returns the
 * evidence with the pinned log key in place of the file's, and a `keys` check: invalid when the
 * receipt's key, the file's TSA certificate or its log key is not one the manifest lists.
 */
export function pinKeys(
  manifest: ManifestKey[],
  evidence: Evidence,
  proof?: Pick<Proof, 'receipt'>,
): { evidence: Evidence; check: OfflineCheck } {
  const name = 'keys';
  const problems: string[] = [];
  const receiptKeyId = proof?.receipt?.keyId;
  if (receiptKeyId !== undefined && !manifest.some((k) => k.keyId === receiptKeyId))
    problems.push(`the receipt key ${receiptKeyId} is not a pinned key`);
  const logKey = manifest.find((k) => k.use === 'log')?.verifierKey;
  if (evidence.logVerifierKey !== undefined && evidence.logVerifierKey !== logKey)
    problems.push('the log key in the proof file is not the pinned log key');
  if (evidence.tsaCertificates !== undefined) {
    try {
      const signer = new X509Certificate(evidence.tsaCertificates).publicKey
        .export({ format: 'der', type: 'spki' })
        .toString('base64');
      if (!manifest.some((k) => k.use === 'tsa' && k.publicKey === signer))
        problems.push('the TSA certificate in the proof file is not a pinned TSA key');
    } catch {
      problems.push('the TSA certificate in the proof file does not parse');
    }
  }
  const pinned: Evidence = { ...evidence, ...(logKey === undefined ? {} : { logVerifierKey: logKey }) };
  return {
    evidence: pinned,
    check:
      problems.length > 0
        ? { name, status: 'invalid', message: problems.join('; ') }
        : { name, status: 'valid', message: 'every key used is one the pinned key manifest lists' },
  };
}

/**
 * The content a proof is checked against: `{ hash }` (a `sha256:` hash), `{ path }` (a file, hashed as
 * a stream), or a string, which is a hash when it is `sha256:` and 64 hex digits and a file path
 * otherwise (name a file that looks like a hash with `{ path }`).
 */
export type Content = string | { hash: string } | { path: string };

async function contentHashOf(content: Content): Promise<string> {
  if (typeof content === 'string') return isContentHash(content) ? content : hashFile(content);
  return 'hash' in content ? content.hash : hashFile(content.path);
}

/**
 * Checks a proof with nothing but the proof, the content and the service's public keys: the content hash
 * matches, the fields form a well-formed signing message, the Ed25519 receipt verifies with a key of
 * the manifest that was valid at the proof's time, and the saved evidence (RFC 3161 token, inclusion in
 * the log) holds. The HMAC signature can only be checked by the service. Rejects when a file cannot be
 * read.
 */
export async function verifyOffline(
  proof: Proof,
  content: Content,
  keys: PublicKeyEntry[] = [],
  evidence: Evidence = {},
): Promise<OfflineCheck[]> {
  const contentHash = await contentHashOf(content);
  const hashMatches = proof.contentHash.toLowerCase() === contentHash.toLowerCase();
  const checks: OfflineCheck[] = [
    {
      name: 'contentHash',
      status: hashMatches ? 'valid' : 'invalid',
      message: hashMatches
        ? 'the content hashes to the proof’s contentHash'
        : `the content hashes to ${contentHash}, the proof says ${proof.contentHash}`,
    },
  ];
  let isWellFormed =
    /^proof_[0-9A-HJKMNP-TV-Z]{26}$/.test(proof.id) &&
    !Number.isNaN(Date.parse(proof.timestamp)) &&
    /^hmac-sha256:[0-9a-f]{64}$/.test(proof.signature);
  try {
    signingMessage(proof);
  } catch {
    isWellFormed = false;
  }
  checks.push({
    name: 'format',
    status: isWellFormed ? 'valid' : 'invalid',
    message: isWellFormed ? 'the proof is well formed' : 'the proof file is malformed',
  });
  checks.push(receiptCheck(proof, keys));
  checks.push(timestampCheck(proof, evidence));
  checks.push(inclusionCheck(proof, evidence));
  checks.push({
    name: 'signature',
    status: 'unavailable',
    message: 'an HMAC signature is checked by the service: use --online',
  });
  return checks;
}

function timestampCheck(proof: Proof, evidence: Evidence): OfflineCheck {
  const name = 'timestamp';
  if (evidence.timestampToken === undefined || evidence.tsaCertificates === undefined)
    return { name, status: 'unavailable', message: 'no RFC 3161 token saved with the proof' };
  const certificates =
    evidence.tsaCertificates.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (certificates.length < 2) return { name, status: 'invalid', message: 'the TSA chain is incomplete' };
  const problem = verifyTimestampToken(
    Buffer.from(evidence.timestampToken, 'base64'),
    Buffer.from(proof.contentHash.slice('sha256:'.length), 'hex'),
    new Date(proof.timestamp),
    new X509Certificate(certificates[0]!),
    new X509Certificate(certificates[1]!),
  );
  return problem === undefined
    ? { name, status: 'valid', message: 'the RFC 3161 token names this hash and time, signed by the TSA' }
    : { name, status: 'invalid', message: `the RFC 3161 token does not hold: ${problem}` };
}

function inclusionCheck(proof: Proof, evidence: Evidence): OfflineCheck {
  const name = 'inclusion';
  if (evidence.tlogProof === undefined || evidence.logVerifierKey === undefined)
    return {
      name,
      status: 'unavailable',
      message: 'no tlog-proof saved with the proof (not in the log yet)',
    };
  try {
    const lines = evidence.tlogProof.split('\n');
    const index = /^index (\d+)$/.exec(lines[1] ?? '')?.[1];
    const blank = lines.indexOf('', 2);
    if (lines[0] !== 'c2sp.org/tlog-proof@v1' || index === undefined || blank < 0) throw new Error('format');
    const hashes = lines.slice(2, blank).map((line) => Buffer.from(line, 'base64'));
    const note = lines.slice(blank + 1).join('\n');
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(evidence.logVerifierKey)));
    const leaf = leafHash(Buffer.from(signingMessage(proof), 'utf8'));
    const isValid = verifyInclusion(Number(index), checkpoint.size, leaf, hashes, checkpoint.rootHash);
    return isValid
      ? { name, status: 'valid', message: `entry ${index} of the log's signed tree of ${checkpoint.size}` }
      : { name, status: 'invalid', message: 'the inclusion proof does not lead to the signed root' };
  } catch (error) {
    return {
      name,
      status: 'invalid',
      message: `the tlog-proof does not hold (${error instanceof Error ? error.message : 'malformed'})`,
    };
  }
}

function receiptCheck(proof: Proof, keys: PublicKeyEntry[]): OfflineCheck {
  if (!proof.receipt)
    return { name: 'receipt', status: 'unavailable', message: 'the proof has no public-key receipt' };
  const { keyId, signature } = proof.receipt;
  const key = keys.find((k) => k.keyId === keyId);
  if (!key) {
    return {
      name: 'receipt',
      status: 'unavailable',
      message: `no public key ${keyId} at hand (see /.well-known/hashproof-keys.json)`,
    };
  }
  const isInWindow =
    key.validFrom <= proof.timestamp && (key.validUntil === null || proof.timestamp < key.validUntil);
  let isValid = false;
  try {
    const publicKey = createPublicKey({
      key: Buffer.from(key.publicKey, 'base64'),
      format: 'der',
      type: 'spki',
    });
    isValid = verifyReceipt(publicKey, signingMessage(proof), signature);
  } catch {
    isValid = false;
  }
  if (!isValid)
    return {
      name: 'receipt',
      status: 'invalid',
      message: `the Ed25519 receipt does not verify with key ${keyId}`,
    };
  if (!isInWindow)
    return {
      name: 'receipt',
      status: 'invalid',
      message: `key ${keyId} was not valid at ${proof.timestamp}`,
    };
  return { name: 'receipt', status: 'valid', message: `the Ed25519 receipt verifies with key ${keyId}` };
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
  async function call<T>(
    method: string,
    path: string,
    { body, headers = {}, isIdempotent = method === 'GET' }: CallOptions = {},
  ): Promise<T> {
    let lastError: HashproofError | undefined;
    for (let attempt = 1; attempt <= (isIdempotent ? attempts : 1); attempt++) {
      if (attempt > 1) await pause(attempt - 1);
      let response: Response;
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
        text = await response.text();
      } catch (error) {
        lastError = new HashproofError(
          0,
          'network_error',
          `cannot reach ${base}: ${error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error)}`,
        );
        continue;
      }
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
  }

  const keyHeaders = (): Record<string, string> =>
    options.apiKey ? { 'x-service-key': options.apiKey } : {};
  const admin = (body?: unknown): CallOptions => ({
    body,
    headers: options.adminKey ? { 'x-service-admin-key': options.adminKey } : {},
  });
  const query = (params: object) => {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(params))
      if (value !== undefined) search.set(key, String(value));
    const text = search.toString();
    return text ? `?${text}` : '';
  };
  const id = (value: string) => encodeURIComponent(value);

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
    recent: (params: { limit?: number; cursor?: string } = {}) =>
      call<ProofPage>('GET', `/api/proofs/recent${query(params)}`),
    search: (params: SearchParams) => call<ProofPage>('GET', `/api/proofs/search${query(params)}`),
    verifyOffline,
    admin: {
      listAccounts: () => call<{ accounts: unknown[] }>('GET', '/api/accounts', admin()),
      createAccount: (body: { name?: string; ownerLabel?: string } = {}) =>
        call<{ account: { id: string } }>('POST', '/api/accounts', admin(body)),
      listApiKeys: (accountId: string) =>
        call<{ apiKeys: unknown[] }>('GET', `/api/accounts/${id(accountId)}/api-keys`, admin()),
      createApiKey: (accountId: string, body: { name?: string; scopes?: string[] } = {}) =>
        call<{ apiKey: { id: string }; key: string }>(
          'POST',
          `/api/accounts/${id(accountId)}/api-keys`,
          admin(body),
        ),
      // Revoking a revoked key answers it unchanged, so a revoke is safe to send again.
      revokeApiKey: (keyId: string) =>
        call<{ apiKey: { id: string; status: string } }>('POST', `/api/api-keys/${id(keyId)}/revoke`, {
          ...admin({}),
          isIdempotent: true,
        }),
      listWebhooks: (accountId: string) =>
        call<{ webhooks: unknown[] }>('GET', `/api/accounts/${id(accountId)}/webhooks`, admin()),
      createWebhook: (accountId: string, body: { url: string; name?: string; events?: string[] }) =>
        call<{ webhook: { id: string }; secret: string }>(
          'POST',
          `/api/accounts/${id(accountId)}/webhooks`,
          admin(body),
        ),
      testWebhook: (webhookId: string) =>
        call<{ delivery: unknown }>('POST', `/api/webhooks/${id(webhookId)}/test`, admin({})),
    },
  };
}

export type HashproofClient = ReturnType<typeof createClient>;

interface CallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Safe to send twice; by default only a GET is. */
  isIdempotent?: boolean;
}

function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 200 * 2 ** (attempt - 1)));
}
