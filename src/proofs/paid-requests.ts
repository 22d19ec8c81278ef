import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import type { Clock } from '../platform/clock.ts';
import * as claims from './payment-claims-store.ts';
import type {
  Payment,
  PaymentAuthorization,
  Settlement,
  VerifiedPayment,
} from '../core/payment-authorization.ts';
import * as store from './proofs-store.ts';
import type { ProofRow } from './proofs-store.ts';

/** How often a request waiting for another instance's paid proof looks for it. */
const PAID_PROOF_POLL_MS = 50;

/** Where a paid request stands once its payment was looked at (`PaidRequests.claim`). */
type ClaimOutcome =
  /** The proof already stored for the key: answered as a replay, and nothing is charged. */
  | { kind: 'stored'; row: ProofRow }
  /** The payment is verified and its authorization claimed for the key: sign, settle, commit, close. */
  | { kind: 'claimed'; claim: PaymentClaim };

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

  /**
   * Verifies the payment and claims its authorization for the proof of (scope, key), or finds the
   * proof already stored for the key (the caller checks it is the same request). Throws 402 for an
   * authorization that paid for another proof, 409 while another payment settles for the key.
   */
  async claim(payment: Payment, scope: string, key: string): Promise<ClaimOutcome> {
    const db = this.#db;
    const { authorization } = payment;
    const known = await claims.findAuthorization(db, authorization);
    if (known !== undefined && known.payload_digest === authorization.payloadDigest) {
      return this.#answerTaken(known, scope, key);
    }
    const verified = await payment.verify();
    const existing = await store.findByIdempotencyKey(db, scope, key);
    if (existing !== undefined) return { kind: 'stored', row: existing };
    const claimed = await claims.claimAuthorization(db, authorization, scope, key, this.#clock.now());
    if (claimed.kind === 'taken') return this.#answerTaken(claimed.row, scope, key);
    if (claimed.kind === 'key_busy') return this.#awaitProof(scope, key);
    const slot = `${scope}\n${key}`;
    const done = Promise.withResolvers<void>();
    this.#settling.set(slot, done.promise);
    const claim = new PaymentClaim(db, authorization, verified, () => {
      this.#settling.delete(slot);
      done.resolve();
    });
    let winner;
    try {
      // A proof committed between the look-up above and the claim: answer it, pay nothing.
      winner = await store.findByIdempotencyKey(db, scope, key);
    } catch (error) {
      claim.close();
      throw error;
    }
    if (winner === undefined) return { kind: 'claimed', claim };
    await claim.release();
    return { kind: 'stored', row: winner };
  }

  /**
   * The payment of a batch: verified for `units` proofs and claimed under the batch's key (one
   * authorization, one batch). `answered`: this very payment already paid for this batch, whose proofs
   * are stored (a retry): the caller answers them, and nothing is charged. Throws 402 for an
   * authorization that paid for something else, 409 while a payment for the same batch settles.
   */
  async claimBatch(
    payment: Payment,
    units: number,
    scope: string,
    batchKey: string,
  ): Promise<{ kind: 'answered' } | { kind: 'claimed'; claim: PaymentClaim }> {
    const { authorization } = payment;
    const known = await claims.findAuthorization(this.#db, authorization);
    if (known !== undefined && known.payload_digest === authorization.payloadDigest) {
      return batchTaken(known, scope, batchKey);
    }
    const verified = await payment.verify(units);
    const claimed = await claims.claimAuthorization(
      this.#db,
      authorization,
      scope,
      batchKey,
      this.#clock.now(),
    );
    if (claimed.kind === 'taken') return batchTaken(claimed.row, scope, batchKey);
    if (claimed.kind === 'key_busy') throw batchBusy();
    return { kind: 'claimed', claim: new PaymentClaim(this.#db, authorization, verified, () => {}) };
  }

  /** An authorization already taken: the proof it paid for if this is the same request, else 402. */
  async #answerTaken(row: claims.AuthorizationRow, scope: string, key: string): Promise<ClaimOutcome> {
    if (row.idempotency_scope === scope && row.idempotency_key === key && row.state !== 'expired') {
      return this.#awaitProof(scope, key);
    }
    throw authorizationUsed(row);
  }

  /**
   * Waits for the proof of a key whose payment another request (on any instance) is settling: the proof
   * is answered as a replay, or after `waitMs` 409 `idempotency_key_in_use`.
   */
  async #awaitProof(scope: string, key: string): Promise<ClaimOutcome> {
    const deadline = performance.now() + this.#waitMs;
    for (;;) {
      const winner = await store.findByIdempotencyKey(this.#db, scope, key);
      if (winner !== undefined) return { kind: 'stored', row: winner };
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

/**
 * A verified payment whose authorization is claimed for one idempotency key: what a caller settles
 * once the proofs it pays for are signed, and commits with them (`authorization`, marked settled in
 * their transaction). `close` ends the claim's wait for others, whatever happened.
 */
export class PaymentClaim {
  readonly authorization: PaymentAuthorization;
  readonly #db: Db;
  readonly #payment: VerifiedPayment;
  #close: (() => void) | undefined;

  constructor(db: Db, authorization: PaymentAuthorization, payment: VerifiedPayment, close: () => void) {
    this.#db = db;
    this.authorization = authorization;
    this.#payment = payment;
    this.#close = close;
  }

  /**
   * Takes the payment. Refused: nothing moved, so the claim is given up and the authorization may be
   * used again. Anything else (no answer) may still land: the claim stays until the authorization
   * expires.
   */
  async settle(): Promise<Settlement> {
    try {
      return await this.#payment.settle();
    } catch (error) {
      if (error instanceof AppError && error.code === 'payment_required') await this.release();
      throw error;
    }
  }

  /** Gives the claim up without settling: nothing was charged. */
  async release(): Promise<void> {
    try {
      await claims.releaseAuthorization(this.#db, this.authorization);
    } finally {
      this.close();
    }
  }

  /** Ends the claim (once): the requests waiting for this key's proof look for it again. */
  close(): void {
    this.#close?.();
    this.#close = undefined;
  }
}

/**
 * A payment that settled for a proof that was then not stored (the database failed, or the key was
 * answered with other content): the answer to the error carries the payer's receipt, and the operator
 * reconciles from it. `cause` is what failed.
 */
export class SettledNotStored extends Error {
  readonly paymentResponse: string;

  constructor(paymentResponse: string, cause: unknown) {
    super('the payment settled but the proof was not stored', { cause });
    this.paymentResponse = paymentResponse;
  }
}

/** 402: the authorization paid for another proof or batch; one payment buys one request's proofs. */
function authorizationUsed(row: claims.AuthorizationRow): AppError {
  return new AppError(
    'payment_required',
    "This payment authorization has already paid for a proof; one payment buys one request's proofs. Sign a new one.",
    { reason: 'authorization_used', ...(row.proof_id !== null ? { proofId: row.proof_id } : {}) },
    { 'Cache-Control': 'no-store' },
  );
}

/** A batch's authorization taken before: by this batch (answered, or still settling), else 402. */
function batchTaken(row: claims.AuthorizationRow, scope: string, batchKey: string): { kind: 'answered' } {
  if (row.idempotency_scope !== scope || row.idempotency_key !== batchKey || row.state === 'expired')
    throw authorizationUsed(row);
  if (row.state === 'settling') throw batchBusy();
  return { kind: 'answered' };
}

/** 409: a payment for the same batch is settling; its proofs answer a retry. */
function batchBusy(): AppError {
  return new AppError(
    'idempotency_key_in_use',
    'A payment for this batch is still being settled; retry in a moment',
    {},
    { 'Retry-After': '1' },
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
