import {
  encodePaymentResponseHeader,
  type HTTPRequestContext,
  type x402HTTPResourceServer,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import type { X402Config } from '../config.ts';
import {
  readAuthorization,
  validityProblem,
  type Payment,
  type PaymentAuthorization,
  type Settlement,
} from '../core/payment-authorization.ts';
import {
  clip,
  decodeChallenge,
  FACILITATOR_TEXT_MAX,
  failedSettlement,
  paymentRequiredError,
  settlementFailed,
  unavailable,
} from './x402-http.ts';

/** How long an EIP-3009 authorization of ours stays valid, and so how late settlement can land. */
export const MAX_TIMEOUT_SECONDS = 300;
/** How far the payer's clock may be ahead of ours when it sets `validBefore`. */
const CLOCK_SKEW_SECONDS = 30;

/** What the facilitator verified, kept for the settlement of the same payment. */
interface VerifiedTerms {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  extensions: Record<string, unknown> | undefined;
}

/** Where a payment is taken: the x402 context it is verified and settled in, and its terms. */
export interface PaidBinding {
  /** The x402 context of the payment for `units` proofs. */
  context(units: number): HTTPRequestContext;
  /** The terms to answer a refusal with. */
  challenge(units: number, error: string): Promise<PaymentRequired>;
}

/**
 * What a paid request carries from the gate (an HTTP header, or an MCP call's `_meta`) to the handler
 * (after the body is validated), with where it is to be taken.
 */
export interface PaymentAttempt extends PaidBinding {
  payload: PaymentPayload;
  /** The authorization the payload carries, as the request claims it (the facilitator verifies it). */
  authorization: PaymentAuthorization;
}

/**
 * The one path every x402 payment takes, whatever carries it (the notarize and batch routes, the MCP
 * tool): held to our terms, verified by the facilitator through the official resource server, then
 * settled once the proofs it pays for are ready. `oneProof` is the amount of one proof's terms.
 */
export class PaidPath {
  readonly #http: x402HTTPResourceServer;
  readonly #config: X402Config;
  readonly #oneProof: () => string | undefined;

  constructor(http: x402HTTPResourceServer, config: X402Config, oneProof: () => string | undefined) {
    this.#http = http;
    this.#config = config;
    this.#oneProof = oneProof;
  }

  /** A decoded payment held to our terms before anyone is asked, or why it is refused. */
  attempt(payload: PaymentPayload, nowMs: number, binding: PaidBinding): PaymentAttempt | string {
    const network = typeof payload.accepted?.network === 'string' ? payload.accepted.network : '';
    if (network !== this.#config.network) return `invalid_network: pay on ${this.#config.network}`;
    const authorization = readAuthorization(network, payload.payload);
    if (authorization === undefined) {
      return 'invalid_payload: not an exact EVM authorization (EIP-3009 or Permit2) with from, nonce and expiry';
    }
    const problem = validityProblem(authorization, nowMs, MAX_TIMEOUT_SECONDS, CLOCK_SKEW_SECONDS);
    if (problem !== undefined) return `invalid_validity: ${problem}`;
    return { ...binding, payload, authorization };
  }

  /**
   * The payment port of an admitted attempt, for the proofs service to verify and then settle: the
   * settlement hands back the receipt (the PAYMENT-RESPONSE value), which nothing here keeps.
   */
  payment(attempt: PaymentAttempt): Payment {
    const signedFor = this.#unitsOf(attempt.payload);
    return {
      authorization: attempt.authorization,
      ...(signedFor !== undefined ? { units: signedFor } : {}),
      verify: async (units = 1) => {
        const verified = await this.#verify(attempt, units);
        return { settle: () => this.#settle(attempt, verified, units) };
      },
    };
  }

  /** How many proofs a payload's amount pays for at our price: a whole positive number, or undefined. */
  #unitsOf(payload: PaymentPayload): number | undefined {
    const one = this.#oneProof();
    const amount = payload.accepted?.amount;
    if (one === undefined || typeof amount !== 'string' || !/^\d{1,30}$/.test(amount)) return undefined;
    const [each, total] = [BigInt(one), BigInt(amount)];
    if (each <= 0n || total <= 0n || total % each !== 0n) return undefined;
    const units = total / each;
    return units <= 1000n ? Number(units) : undefined;
  }

  /**
   * Verifies the payment with the facilitator (nothing moves yet). Rejected → 402 with the reason;
   * facilitator unreachable → 502 `payment_unavailable`. Returns what `settle` needs.
   */
  async #verify(attempt: PaymentAttempt, units: number): Promise<VerifiedTerms> {
    let verified;
    try {
      verified = await this.#http.processHTTPRequest(attempt.context(units));
    } catch (error) {
      throw unavailable('verify', error);
    }
    if (verified.type === 'payment-error') {
      const challenge = decodeChallenge(verified.response.headers);
      const reason = challenge?.error ?? 'payment_rejected';
      throw paymentRequiredError(
        `The payment was not accepted: ${clip(reason, FACILITATOR_TEXT_MAX)}`,
        challenge,
      );
    }
    if (verified.type !== 'payment-verified') throw new Error('a paid operation must require payment');
    // The facilitator checked the signature over this payload, so its `from` is the payer.
    const checked = readAuthorization(attempt.authorization.network, verified.paymentPayload.payload);
    if (checked?.payloadDigest !== attempt.authorization.payloadDigest) {
      const reason = 'invalid_payload: the verified payment is not the one sent';
      throw paymentRequiredError(`Payment required: ${reason}`, await attempt.challenge(units, reason));
    }
    return {
      payload: verified.paymentPayload,
      requirements: verified.paymentRequirements,
      extensions: verified.declaredExtensions,
    };
  }

  /**
   * Settles a verified payment. Refused on chain → 402 with PAYMENT-RESPONSE `success: false`;
   * facilitator unreachable → 502; settlement not confirmed in time → 502 with `settlement: "unknown"`
   * (it may still land, so it is not reported as failed). Returns what the proof records and the
   * PAYMENT-RESPONSE value to send with it.
   */
  async #settle(attempt: PaymentAttempt, verified: VerifiedTerms, units: number): Promise<Settlement> {
    let settled;
    try {
      settled = await this.#http.processSettlement(
        verified.payload,
        verified.requirements,
        verified.extensions,
        { request: attempt.context(units) },
      );
    } catch (error) {
      throw unavailable('settle', error, attempt.authorization);
    }
    if (!settled.success) {
      const response = failedSettlement(settled);
      const reason = `settlement_failed: ${response.errorReason}`;
      throw settlementFailed(response, await attempt.challenge(units, reason));
    }
    return {
      record: {
        network: settled.network,
        payer: settled.payer ?? attempt.authorization.payer,
        transaction: settled.transaction,
        amount: settled.amount ?? verified.requirements.amount,
      },
      // The resource server always encodes it; the payment has moved, so nothing may fail here.
      response: settled.headers['PAYMENT-RESPONSE'] ?? encodePaymentResponseHeader(settled),
    };
  }
}
