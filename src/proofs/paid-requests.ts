import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import type { Clock } from '../platform/clock.ts';
import * as claims from './payment-claims-store.ts';
import type { Payment, PaymentRecord } from '../core/payment-authorization.ts';
import * as store from './proofs-store.ts';
import type { ProofRow } from './proofs-store.ts';

/** How often a request waiting for another instance's paid proof looks for it. */
const PAID_PROOF_POLL_MS = 50;

/** One paid request, as the proofs service hands it over. */
interface PaidRequest<T> {
  scope: string;
  key: string;
  payment: Payment;
  /** Answers the stored proof of (scope, key) (the caller checks the request's fingerprint). */
  replay: (row: ProofRow) => T;
  /** Prepares the proof, calls `settle`, and commits the proof with the authorization marked settled. */
  create: (settle: () => Promise<PaymentRecord>) => Promise<T>;
}

/**
 * Paid requests (docs/security.md, "Payments"). An authorization this service verified and took before
 * is known by its digest: it answers for the proof it paid for and nothing else. Any other is verified
 * by the facilitator before anything is answered from its payer's scope. Then the database decides, on
 * every instance: the authorization is claimed (one authorization, one proof; one payment settling per
 * idempotency key), and only then settled. A request that finds another payment settling for its key
 * waits for that proof, then answers 409.
 */
export class PaidRequests {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #waitMs: number;
  /** Idempotency slots (scope + key) whose payment this instance is settling, to wake its waiters. */
  readonly #settling = new Map<string, Promise<void>>();

  constructor(db: Db, clock: Clock, waitMs: number) {
    this.#db = db;
    this.#clock = clock;
    this.#waitMs = waitMs;
  }

  async notarize<T>(request: PaidRequest<T>): Promise<T> {
    const db = this.#db;
    const { scope, key, payment } = request;
    const { authorization } = payment;
    const known = await claims.findAuthorization(db, authorization);
    if (known !== undefined && known.payload_digest === authorization.payloadDigest) {
      return this.#answerTaken(known, request);
    }
    await payment.verify();
    const existing = await store.findByIdempotencyKey(db, scope, key);
    if (existing !== undefined) return request.replay(existing);
    const claim = await claims.claimAuthorization(db, authorization, scope, key, this.#clock.now());
    if (claim.kind === 'taken') return this.#answerTaken(claim.row, request);
    if (claim.kind === 'key_busy') return this.#awaitProof(request);
    const slot = `${scope}\n${key}`;
    const done = Promise.withResolvers<void>();
    this.#settling.set(slot, done.promise);
    try {
      // A proof committed between the look-up above and the claim: answer it, pay nothing.
      const winner = await store.findByIdempotencyKey(db, scope, key);
      if (winner !== undefined) {
        await claims.releaseAuthorization(db, authorization);
        return request.replay(winner);
      }
      return await request.create(async () => {
        try {
          return await payment.settle();
        } catch (error) {
          // Refused: nothing moved. Anything else (no answer) may still land: the claim stays until
          // the authorization expires.
          if (error instanceof AppError && error.code === 'payment_required') {
            await claims.releaseAuthorization(db, authorization);
          }
          throw error;
        }
      });
    } finally {
      this.#settling.delete(slot);
      done.resolve();
    }
  }

  /** An authorization already taken: the proof it paid for if this is the same request, else 402. */
  async #answerTaken<T>(row: claims.AuthorizationRow, request: PaidRequest<T>): Promise<T> {
    if (
      row.idempotency_scope === request.scope &&
      row.idempotency_key === request.key &&
      row.state !== 'expired'
    ) {
      return this.#awaitProof(request);
    }
    throw new AppError(
      'payment_required',
      'This payment authorization has already paid for a proof; one payment buys one proof. Sign a new one.',
      { reason: 'authorization_used', ...(row.proof_id !== null ? { proofId: row.proof_id } : {}) },
      { 'Cache-Control': 'no-store' },
    );
  }

  /**
   * Waits for the proof of a key whose payment another request (on any instance) is settling: the proof
   * is answered as a replay, or after `waitMs` 409 `idempotency_key_in_use`.
   */
  async #awaitProof<T>(request: PaidRequest<T>): Promise<T> {
    const { scope, key } = request;
    const deadline = performance.now() + this.#waitMs;
    for (;;) {
      const winner = await store.findByIdempotencyKey(this.#db, scope, key);
      if (winner !== undefined) return request.replay(winner);
      const left = deadline - performance.now();
      if (left <= 0) break;
      // Woken at once when this instance settles the key; another instance's proof is looked for anew.
      const running = this.#settling.get(`${scope}\n${key}`);
      await Promise.race([...(running ? [running] : []), sleep(Math.min(left, PAID_PROOF_POLL_MS))]);
    }
    throw new AppError(
      'idempotency_key_in_use',
      'A payment for this idempotencyKey is still being settled; retry in a moment',
      { idempotencyKey: key },
      { 'Retry-After': '1' },
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
