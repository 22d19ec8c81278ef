import { BoundedMap } from '../core/bounded-map.ts';
import { isContentHash } from '../core/hashing.ts';
import { BatchNotarizer, type BatchResult } from './batch-notarize.ts';
import { GroupCommitter } from '../db/group-commit.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { proofTokenRequest } from '../tsa/tsa.ts';
import type { NotarizeBody, Proof } from './proof-schemas.ts';
import * as store from './proofs-store.ts';
import { decodeCursor, encodeCursor, WindowedSearch, type SearchBounds } from './proofs-search.ts';
import {
  deepFreeze,
  proofDocument,
  rowFromInsert,
  signedFields,
  storedToken,
  type StoredToken,
} from './proof-row.ts';
import { PaidRequests, SettledNotStored } from './paid-requests.ts';
import * as claims from './payment-claims-store.ts';
import type { Payment, PaymentAuthorization } from '../core/payment-authorization.ts';
import type { NewProofRow, ProofFilter, ProofRow } from './proofs-store.ts';
import { describeRequest, idempotencyScope, type Principal } from './notarize-request.ts';
import { ProofChecks } from './proof-checks.ts';
import { recordPayment, signNewProof, type ProofSignerDeps } from './proof-signer.ts';
import type { LogService } from '../log/log-service.ts';
import type { VerificationReport } from '../verify/proof-verifier.ts';

const REDACTED = '[redacted]';
/** Integrated proofs kept for reads (oldest dropped first): about 10 MB at most. */
const PROOF_CACHE_SIZE = 10_000;

export { METADATA_MAX_BYTES, type Principal } from './notarize-request.ts';
export { BATCH_MAX_BYTES, BATCH_MAX_ITEMS, ITEMS_PER_REQUEST } from './batch-items.ts';
export type { BatchItem, BatchResult } from './batch-notarize.ts';

interface NotarizeOptions {
  /** The payment of a paid request: verified first, settled once the proof is signed. */
  payment?: Payment;
}

export interface NotarizeResult {
  proof: Proof;
  isReplay: boolean;
  /** The payer's receipt when this request's payment settled (x402: the PAYMENT-RESPONSE value). */
  paymentResponse?: string;
}

interface VerifyResult {
  proof: Proof;
  report: VerificationReport;
}

/**
 * What a search asks for: `q` is an exact id, content or metadata hash, or account id, or part of a
 * label (case-insensitive); every other field must match exactly.
 */
type ProofQuery = Omit<ProofFilter, 'beforeSeq' | 'atLeastSeq' | 'q'> & { q?: string };

export interface ProofPage {
  proofs: Proof[];
  nextCursor: string | null;
}

export interface ProofsServiceDeps extends ProofSignerDeps {
  db: Db;
  engine: 'sqlite' | 'postgres';
  /** Runs inside the transaction that creates new proofs (the event outbox); returns how many events it wrote. */
  onCreated?: (trx: Db, proofs: Proof[]) => Promise<number>;
  /** Runs after that transaction commits, with the count `onCreated` returned. */
  afterCommit?: (eventCount: number) => void;
  /**
   * The transparency log: its origin is named in each integrated proof; it proves their inclusion. While
   * it has a `problem` (its database is not the tree it published), no proof is made.
   */
  log: Pick<LogService, 'origin' | 'inclusion' | 'verifierKey' | 'problem'>;
  /** How long a paid request waits for another payment with the same key before answering 409. */
  chargeWaitMs?: number;
  /** Bounds of searches that cannot be answered from one index (`list`); the defaults serve production. */
  search?: Partial<SearchBounds>;
}

/** Creating, reading, verifying and finding proofs. Owns the write path and its transaction boundaries. */
export class ProofsService {
  readonly #deps: ProofsServiceDeps;
  readonly #writer: GroupCommitter<
    { row: NewProofRow; proof: Proof; authorization: PaymentAuthorization | undefined },
    boolean
  >;
  /** Signature checks and verification reports. */
  readonly #checks: ProofChecks;
  /**
   * Proofs already integrated, by id. A stored proof changes once, when the sequencer gives it its leaf
   * index, and never again (nothing updates or deletes proofs), so these answer reads exactly as the
   * store would, on any instance.
   */
  readonly #integrated = new BoundedMap<string, Found>(PROOF_CACHE_SIZE);
  /** Paid requests: which payment buys which proof. */
  readonly #paid: PaidRequests;
  /** Searches that no index answers in order (`list`). */
  readonly #search: WindowedSearch;
  /** Batches: many proofs in one request. */
  readonly #batches: BatchNotarizer;

  constructor(deps: ProofsServiceDeps) {
    this.#deps = deps;
    this.#checks = new ProofChecks(deps);
    this.#search = new WindowedSearch(deps.db, deps.engine, deps.search);
    this.#paid = new PaidRequests(deps.db, deps.clock, deps.chargeWaitMs ?? 5_000);
    this.#writer = new GroupCommitter(async (items) => {
      let events = 0;
      const inserted = await deps.db.transaction().execute(async (trx) => {
        const ids = await store.insertProofs(
          trx,
          deps.engine,
          items.map((item) => item.row),
        );
        // A batch's proofs share one authorization: it is marked settled once, with its first proof.
        const marked = new Set<PaymentAuthorization>();
        for (const { row, authorization } of items) {
          if (authorization === undefined || !ids.has(row.id) || marked.has(authorization)) continue;
          marked.add(authorization);
          await claims.markSettled(trx, authorization, row.id);
        }
        if (deps.onCreated && ids.size > 0) {
          events = await deps.onCreated(
            trx,
            items.filter((item) => ids.has(item.row.id)).map((item) => item.proof),
          );
        }
        return ids;
      });
      deps.afterCommit?.(events);
      return items.map((item) => inserted.has(item.row.id));
    });
    this.#batches = new BatchNotarizer({
      deps,
      paid: this.#paid,
      commit: (entries) => this.#writer.submitAll(entries),
      newProof: (row) => this.#toProof(rowFromInsert(row), true),
      replay: (row, fingerprint, key) => this.#replay(row, fingerprint, key),
    });
  }

  /**
   * Throws 503 while the log is stopped: a proof made now would either be lost with the database the
   * operator restores, or enter a log inconsistent with checkpoints already published (docs/deploy.md,
   * "Restoring a backup"). /health says why.
   */
  assertAccepting(): void {
    if (this.#deps.log.problem === undefined) return;
    throw new AppError(
      'service_unavailable',
      'New proofs are refused: the transparency log is inconsistent with a checkpoint it published, until the operator restores its database (see /health)',
      {},
      { 'Retry-After': '60' },
    );
  }

  /**
   * Creates the proof, or answers the stored one when the same request was made with this key before
   * (docs/api.md, "Idempotency"). The same key with other content is refused and nothing is written.
   * Concurrent requests with one new key create exactly one proof: the unique (scope, key) index decides.
   * A paid request goes in one line: verify the payment and claim it, sign, settle, commit. A failure
   * after the settlement throws `SettledNotStored`, with the receipt.
   */
  async notarize(
    body: NotarizeBody,
    principal: Principal,
    { payment }: NotarizeOptions = {},
  ): Promise<NotarizeResult> {
    this.assertAccepting();
    const request = describeRequest(body);
    const scope = idempotencyScope(principal);
    const key = body.idempotencyKey;
    if (payment === undefined) {
      const existing = await store.findByIdempotencyKey(this.#deps.db, scope, key);
      if (existing !== undefined) return this.#replay(existing, request.fingerprint, key);
      return this.#commit(await signNewProof(this.#deps, body, principal, request, scope));
    }
    // A paid request's scope is the payer its header names: nothing is answered from it before the
    // payment is known to be the payer's.
    const claimed = await this.#paid.claim(payment, scope, key);
    if (claimed.kind === 'stored') return this.#replay(claimed.row, request.fingerprint, key);
    const { claim } = claimed;
    try {
      const row = await signNewProof(this.#deps, body, principal, request, scope);
      const { record, response } = await claim.settle();
      recordPayment(row, record);
      try {
        return { ...(await this.#commit(row, claim.authorization)), paymentResponse: response };
      } catch (error) {
        throw new SettledNotStored(response, error);
      }
    } finally {
      claim.close();
    }
  }

  /**
   * Commits a signed proof (a paid one with the authorization that paid for it, marked settled in the
   * same transaction), or answers the proof another request committed for its key first.
   */
  async #commit(row: NewProofRow, paidWith?: PaymentAuthorization): Promise<NotarizeResult> {
    // Signed a moment ago with the active key: valid by construction, no need to check the HMAC again.
    const proof = this.#toProof(rowFromInsert(row), true);
    if (await this.#writer.submit({ row, proof, authorization: paidWith })) return { proof, isReplay: false };
    const { idempotency_scope: scope, idempotency_key: key } = row;
    const winner = await store.findByIdempotencyKey(this.#deps.db, scope, key);
    if (winner === undefined) throw new Error('idempotency conflict without a stored proof');
    return this.#replay(winner, row.request_fingerprint, key);
  }

  /**
   * A batch (docs/api.md, "Batches"): each item answered as `notarize` would answer it, in request
   * order, one bad item failing only itself (`BatchNotarizer`).
   */
  async notarizeBatch(
    bodies: unknown[],
    principal: Principal,
    { payment }: NotarizeOptions = {},
  ): Promise<BatchResult> {
    this.assertAccepting();
    return this.#batches.notarize(bodies, principal, payment);
  }

  async get(id: string): Promise<Proof | undefined> {
    return (await this.#find(id))?.proof;
  }

  /** A stored proof: from the store, or from memory once it is integrated. */
  async #find(id: string): Promise<Found | undefined> {
    const known = this.#integrated.get(id);
    if (known !== undefined) return known;
    const row = await store.findById(this.#deps.db, id);
    return row === undefined ? undefined : this.#remembered(row);
  }

  /** The proof of a row just read; kept once the row is integrated, reused when already kept. */
  #remembered(row: ProofRow): Found {
    const known = this.#integrated.get(row.id);
    if (known !== undefined) return known;
    const found = { proof: deepFreeze(this.#toProof(row)), token: storedToken(row) };
    if (row.leaf_index !== null && row.leaf_index !== undefined) this.#integrated.set(row.id, found);
    return found;
  }

  /** Checks the proof as stored now (never from memory: a changed store must show). */
  async verify(id: string): Promise<VerifyResult | undefined> {
    const row = await store.findById(this.#deps.db, id);
    if (row === undefined) return undefined;
    const proof = this.#toProof(row);
    return { proof, report: await this.#checks.report(proof, storedToken(row)) };
  }

  /**
   * The proof's RFC 3161 token (DER TimeStampResp), rebuilt from the proof, its stored TSA signature and
   * the genTime form it was signed in; undefined for an unknown proof, null for a proof made before
   * tokens existed.
   */
  async timestampToken(id: string): Promise<Buffer | null | undefined> {
    const found = await this.#find(id);
    if (found === undefined) return undefined;
    const { proof, token } = found;
    if (token === null) return null;
    const request = proofTokenRequest(proof, token.format);
    return this.#deps.tsa.token(request, Buffer.from(token.signature, 'base64'));
  }

  /**
   * Newest first, signatures redacted (docs/decisions.md §2). A filter that indexes answer in order reads
   * `limit + 1` entries; any other goes through `WindowedSearch`, whose page may be cut short by its
   * budget and then still has a `nextCursor`, where the search stopped (docs/api.md, "Reads and search").
   */
  async list(query: ProofQuery, limit: number, cursor: string | undefined): Promise<ProofPage> {
    const { q, ...fields } = query;
    const filter: ProofFilter = { ...fields, ...(q !== undefined ? { q: textSearch(q) } : {}) };
    const beforeSeq = cursor === undefined ? undefined : decodeCursor(cursor);
    const { db, engine } = this.#deps;
    let found: { seq: number; id: string }[];
    let stoppedAt: number | undefined;
    if (store.isBoundedByLimit(filter, engine)) {
      found = await store.listProofs(db, engine, { ...filter, beforeSeq }, limit);
    } else {
      ({ found, stoppedAt } = await this.#search.run(filter, limit, beforeSeq));
    }
    const page = found.slice(0, limit);
    // Proofs already in memory are not read again: reading a row costs more than finding it.
    const known = new Map(page.map(({ id }) => [id, this.#integrated.get(id)]));
    const missing = page.filter(({ id }) => known.get(id) === undefined).map(({ id }) => id);
    for (const row of await store.findByIds(db, engine, missing)) known.set(row.id, this.#remembered(row));
    const last = page.at(-1);
    const next = found.length > limit && last !== undefined ? last.seq : stoppedAt;
    return {
      proofs: page.flatMap(({ id }) => {
        const proof = known.get(id)?.proof;
        return proof === undefined ? [] : [{ ...proof, signature: REDACTED }];
      }),
      nextCursor: next === undefined ? null : encodeCursor(next),
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

  #toProof(row: ProofRow, isKnownValid = false): Proof {
    const verified =
      isKnownValid ||
      this.#checks.isSignatureValid({
        ...signedFields(row),
        signature: row.signature,
        keyId: row.key_id,
        receipt: null,
      });
    return proofDocument(row, verified, this.#deps.log.origin);
  }
}

/**
 * A stored proof as reads need it: its document and the stored fields the document does not carry
 * (the TSA signature its token is rebuilt from, and the token's genTime form), without the rest of the
 * row: 10,000 of them and their signature checks take about 13 MB, against 35 MB with the whole row.
 */
interface Found {
  proof: Proof;
  token: StoredToken | null;
}

/** The forms `q` is matched in: as given, folded for labels, and as the stored form of a hash. */
function textSearch(q: string): NonNullable<ProofFilter['q']> {
  return { text: q, folded: q.toLowerCase(), hash: isContentHash(q) ? q.toLowerCase() : undefined };
}

/** The answer to a proof id this service does not hold, the same on every route (docs/decisions.md §2). */
export function proofNotFound(id: string): AppError {
  return new AppError('not_found', `No proof with id ${JSON.stringify(id)}`, { id });
}
