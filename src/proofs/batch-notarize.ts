import { sha256Hex } from '../core/hashing.ts';
import type { Payment, PaymentAuthorization } from '../core/payment-authorization.ts';
import { AppError } from '../errors.ts';
import { proofTokenRequest } from '../tsa/tsa.ts';
import { firstOfEachKey, readItems, type ValidItem } from './batch-items.ts';
import { idempotencyScope, type Principal } from './notarize-request.ts';
import { SettledNotStored, type PaidRequests } from './paid-requests.ts';
import { storedToken, type StoredToken } from './proof-row.ts';
import type { Proof } from './proof-schemas.ts';
import { recordPayment, signNewProof, type ProofSignerDeps } from './proof-signer.ts';
import * as store from './proofs-store.ts';
import type { NewProofRow, ProofRow } from './proofs-store.ts';
import type { Db } from '../db/index.ts';

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

/** What a batch needs of the proofs service: its parts, and its write and replay paths. */
export interface BatchPort {
  deps: ProofSignerDeps & { db: Db; engine: 'sqlite' | 'postgres' };
  paid: PaidRequests;
  /** Commits rows together (one group commit); true for each row stored, false for one that lost its key. */
  commit(
    entries: { row: NewProofRow; proof: Proof; authorization: PaymentAuthorization | undefined }[],
  ): Promise<boolean[]>;
  /** The document of a proof just signed. */
  newProof(row: NewProofRow): Proof;
  /** A stored proof as the answer to a request with its key: a replay, or throws 422 for other content. */
  replay(row: ProofRow, fingerprint: string, key: string): { proof: Proof; isReplay: boolean };
}

/**
 * Batches (docs/api.md, "Batches"): each item answered as `notarize` would answer it, in request
 * order, one bad item failing only itself; the new proofs signed together and committed in one
 * transaction. A paid batch is verified for the count of its new proofs, claimed, signed, settled
 * once and committed, in the same line as one proof.
 */
export class BatchNotarizer {
  readonly #port: BatchPort;

  constructor(port: BatchPort) {
    this.#port = port;
  }

  async notarize(
    bodies: unknown[],
    principal: Principal,
    payment: Payment | undefined,
  ): Promise<BatchResult> {
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
    const claimed = await this.#port.paid.claimBatch(payment, units, scope, batchKey);
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
    const { db, engine } = this.#port.deps;
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
      items.map((item) => signNewProof(this.#port.deps, item.body, principal, item.request, scope)),
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
      proof: this.#port.newProof(row),
      authorization: paidWith,
    }));
    const inserted = await this.#port.commit(entries);
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
      const { proof, isReplay } = this.#port.replay(row, item.request.fingerprint, item.body.idempotencyKey);
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
        : this.#port.deps.tsa
            .token(proofTokenRequest(proof, token.format), Buffer.from(token.signature, 'base64'))
            .toString('base64');
    return { ok: true, proof, isReplay: answer.isReplay || !isFirst, timestampToken };
  }
}
