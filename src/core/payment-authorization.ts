import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from './hashing.ts';

/**
 * What identifies an x402 `exact` EVM payment once and for all, read from the payload a payer signed:
 * EIP-3009 `transferWithAuthorization` (`authorization`) or Permit2 (`permit2Authorization`). On chain
 * each (payer, nonce) can move money once; the service holds it to one proof (docs/security.md).
 */
export interface PaymentAuthorization {
  network: string;
  /** The signer, lowercase: `from` of either shape; the facilitator's verification checks the signature. */
  payer: string;
  /** Lowercase, as signed. */
  nonce: string;
  /** SHA-256 of the canonical JSON of the signed payload (authorization and signature). */
  payloadDigest: string;
  /** When the authorization stops being valid on chain (EIP-3009 `validBefore`, Permit2 `deadline`). */
  validBeforeMs: number;
}

/** What a settled payment gives the proof to record. */
export interface PaymentRecord {
  network: string;
  payer: string;
  transaction: string;
  amount: string;
}

/** A settled payment: what the proof records, and the receipt the payer gets back. */
export interface Settlement {
  record: PaymentRecord;
  /** The receipt as the protocol sends it to the payer (x402: the value of the PAYMENT-RESPONSE header). */
  response: string;
}

/**
 * The payment port: how the proofs service takes the payment of a paid request, whatever protocol
 * carries it (the x402 gate in payments/ implements it). `authorization` is what the request claims;
 * `verify` has it checked (nothing moves yet) and throws when it is refused.
 */
export interface Payment {
  readonly authorization: PaymentAuthorization;
  /** How many proofs the payer signed for (its amount over the price), when it is a whole number. */
  readonly units?: number;
  /**
   * `units` is how many proofs the payment must pay for (1 by default; a batch's count of new items):
   * the terms ask the price times that, and a payment for another amount is refused with the new terms.
   */
  verify(units?: number): Promise<VerifiedPayment>;
}

/**
 * A payment its facilitator checked. `settle` takes it, once the proofs it pays for are prepared; they
 * are committed only after. A refusal (nothing moved) throws 402 `payment_required`; any other failure
 * leaves the outcome unknown (the payment may still land).
 */
export interface VerifiedPayment {
  settle(): Promise<Settlement>;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const EIP3009_NONCE = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^\d{1,78}$/;

/**
 * Reads the authorization out of an x402 v2 `exact` EVM payload; undefined when the payload has neither
 * shape or a field is malformed (the caller answers 402).
 */
export function readAuthorization(network: string, payload: unknown): PaymentAuthorization | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { authorization, permit2Authorization } = payload as {
    authorization?: Record<string, unknown>;
    permit2Authorization?: Record<string, unknown>;
  };
  let fields: { from: unknown; nonce: unknown; validBefore: unknown };
  let noncePattern: RegExp;
  if (authorization !== undefined && permit2Authorization === undefined) {
    fields = { from: authorization.from, nonce: authorization.nonce, validBefore: authorization.validBefore };
    noncePattern = EIP3009_NONCE;
  } else if (permit2Authorization !== undefined && authorization === undefined) {
    fields = {
      from: permit2Authorization.from,
      nonce: permit2Authorization.nonce,
      validBefore: permit2Authorization.deadline,
    };
    noncePattern = UINT;
  } else {
    return undefined;
  }
  const { from, nonce, validBefore } = fields;
  if (typeof from !== 'string' || !ADDRESS.test(from)) return undefined;
  if (typeof nonce !== 'string' || !noncePattern.test(nonce)) return undefined;
  if (typeof validBefore !== 'string' || !UINT.test(validBefore)) return undefined;
  const seconds = Number(validBefore);
  if (!Number.isSafeInteger(seconds)) return undefined;
  return {
    network,
    payer: from.toLowerCase(),
    nonce: nonce.toLowerCase(),
    payloadDigest: sha256Hex(canonicalJson(payload)),
    validBeforeMs: seconds * 1000,
  };
}

/**
 * Why an authorization's validity window does not fit the terms, or undefined when it does. The terms
 * say `maxTimeoutSeconds`: an authorization must not stay valid longer than that (plus clock skew), or a
 * payer's signed promise would stay spendable for years.
 */
export function validityProblem(
  authorization: PaymentAuthorization,
  nowMs: number,
  maxTimeoutSeconds: number,
  skewSeconds: number,
): string | undefined {
  if (authorization.validBeforeMs <= nowMs) return 'the payment authorization has expired';
  const latestMs = nowMs + (maxTimeoutSeconds + skewSeconds) * 1000;
  if (authorization.validBeforeMs > latestMs) {
    return `the payment authorization is valid for too long: at most ${maxTimeoutSeconds} seconds from now`;
  }
  return undefined;
}
