import { BoundedMap } from '../core/bounded-map.ts';
import { isContentHash, sha256Hex } from '../core/hashing.ts';
import { firstOfEachKey, readItems, type ValidItem } from './batch-items.ts';
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
   * order, one bad item failing only itself; the new proofs signed together and committed in one
   * transaction. A paid batch is verified for the count of its new proofs, claimed, signed, settled
   * once and committed, in the same line as one proof.
   */
  async notarizeBatch(
    bodies: unknown[],
    principal: Principal,
    { payment }: NotarizeOptions = {},
  ): Promise<BatchResult> {
    this.assertAccepting();
    const read = readItems(bodies);
    const firsts = firstOfEachKey(read);
    const scope = idempotencyScope(principal);
    let byKey: Map<string, ItemAnswer>;
    let paymentResponse: string | undefined;
    if (payment === undefined) byKey = await this.#createMany(firsts, principal, scope);
    else ({ byKey, paymentResponse } = await this.#createManyPaid(firsts, principal, scope, payment));
    const items: BatchItem[] = [];
    for (const [i, entry] of read.entries()) {
      // Answering a thousand items builds a thousand tokens: other requests get their turn.
      if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
      items.push(entry.ok ? this.#itemAnswer(entry.item, firsts, byKey) : { ok: false, error: entry.error });
    }
    return { items, ...(paymentResponse !== undefined ? { paymentResponse } : {}) };
  }

  /** The answer of each new key of a free (demo) or API-key batch, by idempotency key. */
  async #createMany(
    firsts: ValidItem[],
    principal: Principal,
    scope: string,
  ): Promise<Map<string, ItemAnswer>> {
    const { answers, fresh } = await this.#answerStored(firsts, scope);
    const rows = await this.#signMany(fresh, principal, scope);
    await this.#commitMany(rows, fresh, answers);
    return answers;
  }

  /**
   * A paid batch: the payment is verified for the count of items not already answered (the terms ask
   * the price times that count; another amount gets 402 with the new terms) and claimed under the
   * batch's key; the new proofs are signed, the payment settled once, the proofs committed with it.
   */
  async #createManyPaid(
    firsts: ValidItem[],
    principal: Principal,
    scope: string,
    payment: Payment,
  ): Promise<{ byKey: Map<string, ItemAnswer>; paymentResponse?: string }> {
    const before = await this.#answerStored(firsts, scope);
    // Nothing new: the payment is checked for what it was signed for (it proves the payer), never settled.
    const units = before.fresh.length > 0 ? before.fresh.length : (payment.units ?? 1);
    const batchKey = `batch:${sha256Hex(
      firsts
        .map((item) => item.body.idempotencyKey)
        .sort()
        .join('\n'),
    )}`;
    const claimed = await this.#paid.claimBatch(payment, units, scope, batchKey);
    if (claimed.kind === 'answered') return { byKey: await this.#answerAfterPayment(firsts, scope) };
    const { claim } = claimed;
    try {
      // Counted again now that the payment is claimed: items another request stored meanwhile.
      const { answers, fresh } = await this.#answerStored(firsts, scope);
      if (fresh.length === 0) {
        await claim.release();
        return { byKey: answers };
      }
      if (fresh.length !== units && before.fresh.length > 0) {
        await claim.release();
        throw new AppError(
          'idempotency_key_in_use',
          'Items of this batch were stored by another request while it was being paid for; nothing was charged. Retry: the new terms count only the items still new.',
          {},
          { 'Retry-After': '1' },
        );
      }
      const rows = await this.#signMany(fresh, principal, scope);
      const { record, response } = await claim.settle();
      const each = (BigInt(record.amount) / BigInt(units)).toString();
      for (const row of rows) recordPayment(row, { ...record, amount: each });
      try {
        await this.#commitMany(rows, fresh, answers, claim.authorization);
      } catch (error) {
        throw new SettledNotStored(response, error);
      }
      return { byKey: answers, paymentResponse: response };
    } finally {
      claim.close();
    }
  }

  /** A batch its payment already paid for: every item is answered from its stored proof. */
  async #answerAfterPayment(firsts: ValidItem[], scope: string): Promise<Map<string, ItemAnswer>> {
    const { answers, fresh } = await this.#answerStored(firsts, scope);
    for (const item of fresh) {
      answers.set(item.body.idempotencyKey, {
        ok: false,
        error: new AppError(
          'idempotency_key_in_use',
          'This batch was paid for, but this item has no proof yet; retry in a moment',
          { idempotencyKey: item.body.idempotencyKey },
        ),
      });
    }
    return answers;
  }

  /** The answers of the keys already stored in the scope (replays, or 422), and the items still new. */
  async #answerStored(
    firsts: ValidItem[],
    scope: string,
  ): Promise<{ answers: Map<string, ItemAnswer>; fresh: ValidItem[] }> {
    const { db, engine } = this.#deps;
    const keys = firsts.map((item) => item.body.idempotencyKey);
    const stored = new Map(
      (await store.findByIdempotencyKeys(db, engine, scope, keys)).map((row) => [row.idempotency_key, row]),
    );
    const answers = new Map<string, ItemAnswer>();
    const fresh: ValidItem[] = [];
    for (const item of firsts) {
      const row = stored.get(item.body.idempotencyKey);
      if (row === undefined) fresh.push(item);
      else answers.set(item.body.idempotencyKey, this.#storedAnswer(row, item));
    }
    return { answers, fresh };
  }

  #signMany(items: ValidItem[], principal: Principal, scope: string): Promise<NewProofRow[]> {
    return Promise.all(
      items.map((item) => signNewProof(this.#deps, item.body, principal, item.request, scope)),
    );
  }

  /**
   * Commits a batch's new proofs in one transaction; a proof another request committed first for its key
   * is answered instead (a replay, or 422 for other content).
   */
  async #commitMany(
    rows: NewProofRow[],
    items: ValidItem[],
    answers: Map<string, ItemAnswer>,
    paidWith?: PaymentAuthorization,
  ): Promise<void> {
    if (rows.length === 0) return;
    const entries = rows.map((row) => ({
      row,
      proof: this.#toProof(rowFromInsert(row), true),
      authorization: paidWith,
    }));
    const inserted = await this.#writer.submitAll(entries);
    const lost: ValidItem[] = [];
    for (const [i, { row, proof }] of entries.entries()) {
      const item = items[i] as ValidItem;
      if (inserted[i])
        answers.set(row.idempotency_key, { ok: true, proof, isReplay: false, token: storedToken(row) });
      else lost.push(item);
    }
    if (lost.length > 0) {
      const { answers: winners, fresh } = await this.#answerStored(lost, rows[0]?.idempotency_scope ?? '');
      if (fresh.length > 0) throw new Error('idempotency conflict without a stored proof');
      for (const [key, answer] of winners) answers.set(key, answer);
    }
  }

  /** A stored proof as the answer to an item with its key: a replay, or 422 for other content. */
  #storedAnswer(row: ProofRow, item: ValidItem): ItemAnswer {
    try {
      const { proof, isReplay } = this.#replay(row, item.request.fingerprint, item.body.idempotencyKey);
      return { ok: true, proof, isReplay, token: storedToken(row) };
    } catch (error) {
      if (error instanceof AppError) return { ok: false, error };
      throw error;
    }
  }

  /**
   * An item's answer: its key's answer (with the RFC 3161 token inline), or, for a later item with a key
   * an earlier item of the batch used, that answer as a replay (422 for other content).
   */
  #itemAnswer(item: ValidItem, firsts: ValidItem[], byKey: Map<string, ItemAnswer>): BatchItem {
    const key = item.body.idempotencyKey;
    const answer = byKey.get(key);
    if (answer === undefined) throw new Error(`no answer for the key of item ${item.index}`);
    const first = firsts.find((f) => f.body.idempotencyKey === key);
    const isFirst = first?.index === item.index;
    if (!isFirst && first?.request.fingerprint !== item.request.fingerprint) {
      return {
        ok: false,
        error: new AppError(
          'idempotency_key_reused',
          'This idempotencyKey was already used for a different request; use a new key for new content',
          { ...(answer.ok ? { proofId: answer.proof.id } : {}), idempotencyKey: key },
        ),
      };
    }
    if (!answer.ok) return answer;
    const { proof, token } = answer;
    const timestampToken =
      token === null
        ? null
        : this.#deps.tsa
            .token(proofTokenRequest(proof, token.format), Buffer.from(token.signature, 'base64'))
            .toString('base64');
    return { ok: true, proof, isReplay: answer.isReplay || !isFirst, timestampToken };
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

/** What one key of a batch is answered: its proof (new or stored) and token, or an error. */
type ItemAnswer =
  { ok: true; proof: Proof; isReplay: boolean; token: StoredToken | null } | { ok: false; error: AppError };

/** One item of a batch's answer: its proof with the RFC 3161 token (base64 DER) inline, or its error. */
export type BatchItem =
  | { ok: true; proof: Proof; isReplay: boolean; timestampToken: string | null }
  | { ok: false; error: AppError };

export interface BatchResult {
  items: BatchItem[];
  /** The payer's receipt when the batch's payment settled (x402: the PAYMENT-RESPONSE value). */
  paymentResponse?: string;
}

/** The forms `q` is matched in: as given, folded for labels, and as the stored form of a hash. */
function textSearch(q: string): NonNullable<ProofFilter['q']> {
  return { text: q, folded: q.toLowerCase(), hash: isContentHash(q) ? q.toLowerCase() : undefined };
}

/** The answer to a proof id this service does not hold, the same on every route (docs/decisions.md §2). */
export function proofNotFound(id: string): AppError {
  return new AppError('not_found', `No proof with id ${JSON.stringify(id)}`, { id });
}
