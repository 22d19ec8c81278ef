import { canonicalJson, nestsDeeperThan } from '../core/canonical-json.ts';
import { metadataHash, metadataKeys, normalizeContentHash, sha256Hex } from '../core/hashing.ts';
import type { IdGenerator } from '../core/ids.ts';
import { hmacSign, hmacVerify, signingMessage } from '../core/proof-signature.ts';
import { signReceipt, verifyReceipt } from '../core/receipt.ts';
import { GroupCommitter } from '../db/group-commit.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import type { Keyring } from '../keys/keyring.ts';
import type { Clock } from '../platform/clock.ts';
import type { NotarizeBody, Proof } from './proof-schemas.ts';
import * as store from './proofs-store.ts';
import type { NewProofRow, ProofFilter, ProofRow } from './proofs-store.ts';

export const METADATA_MAX_BYTES = 8192;
/** Deeper metadata is refused before anything recursive (serialization, hashing) walks it. */
export const METADATA_MAX_DEPTH = 32;
export const REDACTED = '[redacted]';

/** Who asks for a proof: decides the idempotency scope and what the proof records (DECISIONS §3). */
export type Principal =
  | { kind: 'public' }
  | { kind: 'account'; accountId: string }
  | { kind: 'payer'; network: string; payer: string };

export interface PaymentRecord {
  network: string;
  payer: string;
  transaction: string;
  amount: string;
}

export interface NotarizeResult {
  proof: Proof;
  isReplay: boolean;
}

export interface VerifyResult {
  proof: Proof;
  isSignatureValid: boolean;
  keyId: string;
  signingMessage: string;
  /** null when the proof has no receipt (made before receipts existed). */
  isReceiptValid: boolean | null;
}

export interface ProofPage {
  proofs: Proof[];
  nextCursor: string | null;
}

export interface ProofsServiceDeps {
  db: Db;
  engine: 'sqlite' | 'postgres';
  keyring: Keyring;
  ids: IdGenerator;
  clock: Clock;
  /** Runs inside the transaction that creates new proofs (the event outbox); returns how many events it wrote. */
  onCreated?: (trx: Db, proofs: Proof[]) => Promise<number>;
  /** Runs after that transaction commits, with the count `onCreated` returned. */
  afterCommit?: (eventCount: number) => void;
}

/** Creating, reading, verifying and finding proofs. Owns the write path and its transaction boundaries. */
export class ProofsService {
  readonly #deps: ProofsServiceDeps;
  readonly #writer: GroupCommitter<NewProofRow, boolean>;

  constructor(deps: ProofsServiceDeps) {
    this.#deps = deps;
    this.#writer = new GroupCommitter(async (rows) => {
      let events = 0;
      const inserted = await deps.db.transaction().execute(async (trx) => {
        const ids = await store.insertProofs(trx, rows);
        if (deps.onCreated && ids.size > 0) {
          events = await deps.onCreated(
            trx,
            rows.filter((row) => ids.has(row.id)).map((row) => this.#toProof(rowFromInsert(row))),
          );
        }
        return ids;
      });
      deps.afterCommit?.(events);
      return rows.map((row) => inserted.has(row.id));
    });
  }

  /**
   * Creates the proof, or answers the stored one when the same request was made with this key before
   * (SPEC.md §4 rules 1–2). The same key with other content is refused and nothing is written.
   * Concurrent requests with one new key create exactly one proof: the unique (scope, key) index decides.
   */
  async notarize(
    body: NotarizeBody,
    principal: Principal,
    payment: PaymentRecord | null = null,
  ): Promise<NotarizeResult> {
    const request = describeRequest(body);
    const scope = idempotencyScope(principal);
    const existing = await store.findByIdempotencyKey(this.#deps.db, scope, body.idempotencyKey);
    if (existing !== undefined) return this.#replay(existing, request.fingerprint, body.idempotencyKey);

    const createdAt = this.#deps.clock.now();
    const key = this.#deps.keyring.active;
    const receiptKey = this.#deps.keyring.activeReceiptKey;
    const id = this.#deps.ids.next('proof', createdAt);
    const timestamp = new Date(createdAt).toISOString();
    const signed = {
      id,
      timestamp,
      contentHash: request.contentHash,
      metadataHash: request.metadataHash,
      label: body.label,
    };
    const row: NewProofRow = {
      id,
      created_at: createdAt,
      content_hash: request.contentHash,
      label: body.label,
      label_folded: body.label.toLowerCase(),
      metadata_hash: request.metadataHash,
      metadata_keys: JSON.stringify(request.metadataKeys),
      signature: hmacSign(key.keyObject, signed),
      receipt: signReceipt(receiptKey.privateKey, signingMessage(signed)),
      receipt_key_id: receiptKey.keyId,
      key_id: key.keyId,
      idempotency_scope: scope,
      idempotency_key: body.idempotencyKey,
      request_fingerprint: request.fingerprint,
      account_id: principal.kind === 'account' ? principal.accountId : null,
      created_via: principal.kind === 'account' ? 'api_key' : principal.kind === 'payer' ? 'x402' : 'demo',
      payment_network: payment?.network ?? null,
      payment_payer: payment?.payer ?? null,
      payment_transaction: payment?.transaction ?? null,
      payment_amount: payment?.amount ?? null,
    };
    if (await this.#writer.submit(row)) {
      return { proof: this.#toProof(rowFromInsert(row)), isReplay: false };
    }
    const winner = await store.findByIdempotencyKey(this.#deps.db, scope, body.idempotencyKey);
    if (winner === undefined) throw new Error('idempotency conflict without a stored proof');
    return this.#replay(winner, request.fingerprint, body.idempotencyKey);
  }

  async get(id: string): Promise<Proof | undefined> {
    const row = await store.findById(this.#deps.db, id);
    return row === undefined ? undefined : this.#toProof(row);
  }

  async verify(id: string): Promise<VerifyResult | undefined> {
    const row = await store.findById(this.#deps.db, id);
    if (row === undefined) return undefined;
    const proof = this.#toProof(row);
    const message = signingMessage(proof);
    const receiptKey = proof.receipt ? this.#deps.keyring.findReceiptKey(proof.receipt.keyId) : undefined;
    return {
      proof,
      isSignatureValid: proof.verified,
      keyId: row.key_id,
      signingMessage: message,
      isReceiptValid: proof.receipt
        ? receiptKey !== undefined && verifyReceipt(receiptKey.publicKey, message, proof.receipt.signature)
        : null,
    };
  }

  /** Newest first, signatures redacted (DECISIONS §4). */
  async list(
    filter: Omit<ProofFilter, 'beforeSeq'>,
    limit: number,
    cursor: string | undefined,
  ): Promise<ProofPage> {
    const beforeSeq = cursor === undefined ? undefined : decodeCursor(cursor);
    const labelSearch = this.#deps.engine === 'sqlite' ? 'fts' : 'like';
    const rows = await store.listProofs(this.#deps.db, { ...filter, beforeSeq, labelSearch }, limit);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      proofs: page.map((row) => ({ ...this.#toProof(row), signature: REDACTED })),
      nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.seq) : null,
    };
  }

  /** Waits for every accepted write to be committed (graceful stop). */
  async drain(): Promise<void> {
    await this.#writer.idle();
  }

  #replay(row: ProofRow, fingerprint: string, idempotencyKey: string): NotarizeResult {
    if (row.request_fingerprint !== fingerprint) {
      throw new AppError(
        'idempotency_key_reused',
        'This idempotencyKey was already used for a different request; use a new key for new content',
        { proofId: row.id, idempotencyKey },
      );
    }
    return { proof: this.#toProof(row), isReplay: true };
  }

  #toProof(row: ProofRow): Proof {
    const timestamp = new Date(Number(row.created_at)).toISOString();
    const fields = {
      id: row.id,
      timestamp,
      contentHash: row.content_hash,
      metadataHash: row.metadata_hash,
      label: row.label,
    };
    const key = this.#deps.keyring.find(row.key_id);
    return {
      ...fields,
      verified: key !== undefined && hmacVerify(key.keyObject, fields, row.signature),
      metadataKeys: JSON.parse(row.metadata_keys) as string[],
      signature: row.signature,
      keyId: row.key_id,
      accountId: row.account_id,
      payment:
        row.payment_transaction === null
          ? null
          : {
              network: row.payment_network ?? '',
              payer: row.payment_payer ?? '',
              transaction: row.payment_transaction,
              amount: row.payment_amount ?? '',
            },
      receipt:
        row.receipt === null || row.receipt_key_id === null
          ? null
          : { keyId: row.receipt_key_id, signature: row.receipt },
    };
  }
}

interface DescribedRequest {
  contentHash: string;
  metadataHash: string;
  metadataKeys: string[];
  fingerprint: string;
}

/** Checks what the schema cannot express and derives every hash of the request. */
function describeRequest(body: NotarizeBody): DescribedRequest {
  const metadata = body.metadata as Record<string, unknown> | undefined;
  if (metadata !== undefined) {
    if (nestsDeeperThan(metadata, METADATA_MAX_DEPTH)) {
      throw invalidField(
        '/metadata',
        `must not nest objects and arrays deeper than ${METADATA_MAX_DEPTH} levels`,
        'maxDepth',
      );
    }
    const sizeBytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
    if (sizeBytes > METADATA_MAX_BYTES) {
      throw invalidField(
        '/metadata',
        `must be at most ${METADATA_MAX_BYTES} bytes as JSON (got ${sizeBytes})`,
        'maxBytes',
      );
    }
    const malformed = findIllFormedString(metadata, '/metadata');
    if (malformed !== undefined)
      throw invalidField(malformed, 'contains an unpaired UTF-16 surrogate', 'wellFormed');
  }
  for (const field of ['label', 'idempotencyKey'] as const) {
    if (!body[field].isWellFormed())
      throw invalidField(`/${field}`, 'contains an unpaired UTF-16 surrogate', 'wellFormed');
  }
  const contentHash = normalizeContentHash(body.contentHash);
  const hashOfMetadata = metadataHash(metadata);
  return {
    contentHash,
    metadataHash: hashOfMetadata,
    metadataKeys: metadataKeys(metadata),
    fingerprint: sha256Hex(canonicalJson({ contentHash, label: body.label, metadataHash: hashOfMetadata })),
  };
}

function invalidField(path: string, message: string, keyword: string): AppError {
  return new AppError('invalid_request', `Invalid request: ${path} ${message}`, {
    errors: [{ location: 'body', path, message, keyword }],
  });
}

/** Text that is not valid Unicode cannot be stored and read back unchanged, so it is refused. */
function findIllFormedString(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findIllFormedString(item, `${path}/${i}`);
      if (found !== undefined) return found;
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (!key.isWellFormed()) return `${path}/${key}`;
      const found = findIllFormedString(item, `${path}/${key}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

export function idempotencyScope(principal: Principal): string {
  switch (principal.kind) {
    case 'public':
      return 'public';
    case 'account':
      return `acct:${principal.accountId}`;
    case 'payer':
      return `payer:${principal.network}:${principal.payer.toLowerCase()}`;
  }
}

function rowFromInsert(row: NewProofRow): ProofRow {
  return { ...row, seq: 0 } as ProofRow;
}

function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = /^s(\d{1,15})$/.exec(text)?.[1];
  if (seq === undefined) {
    throw new AppError('invalid_request', 'Invalid request: cursor is not one this service issued', {
      errors: [
        { location: 'querystring', path: '/cursor', message: 'is not a valid cursor', keyword: 'cursor' },
      ],
    });
  }
  return Number(seq);
}
