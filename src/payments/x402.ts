import type { FastifyRequest } from 'fastify';
import {
  encodePaymentResponseHeader,
  HTTPFacilitatorClient,
  x402HTTPResourceServer,
  type HTTPRequestContext,
} from '@x402/core/http';
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { bazaarResourceServerExtension } from '@x402/extensions/bazaar';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { createCdpAuthHeaders } from '@coinbase/x402';
import { ConfigError, type Config, type X402Config } from '../config.ts';
import type { AppError } from '../errors.ts';
import { PAID_BATCH_ROUTE, PAID_ROUTE, priceTimes, type PaidOperation } from './terms.ts';
import { batchPaymentInfo, paidBatchRoute, paidRoute, paymentInfo } from './x402-route.ts';
import {
  clip,
  decodeChallenge,
  decodePayload,
  describe,
  FACILITATOR_TEXT_MAX,
  OutageAwareFacilitator,
  paymentRequiredError,
  requestAdapter,
  settlementFailed,
  failedSettlement,
  staticAdapter,
  unavailable,
} from './x402-http.ts';
import {
  readAuthorization,
  validityProblem,
  type Payment,
  type PaymentAuthorization,
  type Settlement,
} from '../core/payment-authorization.ts';

/** How long an EIP-3009 authorization of ours stays valid, and so how late settlement can land. */
const MAX_TIMEOUT_SECONDS = 300;
/** How far the payer's clock may be ahead of ours when it sets `validBefore`. */
const CLOCK_SKEW_SECONDS = 30;

/** What the facilitator verified, kept for the settlement of the same payment. */
interface VerifiedTerms {
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  extensions: Record<string, unknown> | undefined;
}

/** What a paid request carries from the gate (headers) to the handler (after body validation). */
interface PaymentAttempt {
  payload: PaymentPayload;
  /** The authorization the payload carries, as the header claims it (the facilitator verifies it). */
  authorization: PaymentAuthorization;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The x402 payment the request carries, once the gate accepted its header. */
    payment?: PaymentAttempt;
  }
}

/**
 * The x402 payment gate of the notarize route, built on the official @x402/core resource server:
 * challenge (402 + PAYMENT-REQUIRED) before the body is read, then verify → proof → settle, where the
 * proof is committed only after settlement succeeded. Which authorization buys which proof is decided by
 * the proofs service in the database (`payment_authorizations`), on every instance.
 */
export class PaymentGate {
  readonly #http: x402HTTPResourceServer;
  readonly #config: X402Config;
  readonly #resourceUrl: string;
  /**
   * The route's x402 `PaymentRequired`, built once by the resource server at start-up: it depends only
   * on the configured terms and the resource URL, never on the request.
   */
  readonly #unpaid: PaymentRequired;
  /** How many proofs a batch request pays for, by the adapter of its x402 context (the route's price). */
  readonly #units: WeakMap<object, number>;

  private constructor(
    http: x402HTTPResourceServer,
    config: X402Config,
    resourceUrl: string,
    unpaid: PaymentRequired,
    units: WeakMap<object, number>,
  ) {
    this.#http = http;
    this.#config = config;
    this.#resourceUrl = resourceUrl;
    this.#unpaid = unpaid;
    this.#units = units;
  }

  /**
   * Builds the gate and asks the facilitator what it supports (`GET /supported`). A facilitator that is
   * unreachable or does not support the configured scheme and network stops start-up (ConfigError).
   */
  static async create(
    config: Config,
    {
      facilitator,
      inputSchema,
      batchInputSchema,
    }: { facilitator?: FacilitatorClient | undefined; inputSchema: object; batchInputSchema: object },
  ): Promise<PaymentGate> {
    const x402 = config.x402;
    if (x402 === undefined) throw new Error('PaymentGate needs the x402 configuration');
    const client =
      facilitator ??
      new HTTPFacilitatorClient({
        url: x402.facilitatorUrl,
        timeoutMs: x402.facilitatorTimeoutMs,
        // Coinbase's facilitator authenticates each call with a JWT signed by the operator's CDP key.
        ...(x402.cdpApiKey
          ? { createAuthHeaders: createCdpAuthHeaders(x402.cdpApiKey.id, x402.cdpApiKey.secret) }
          : {}),
      });
    const resourceServer = new x402ResourceServer(new OutageAwareFacilitator(client))
      .register(x402.network as `${string}:${string}`, new ExactEvmScheme())
      .registerExtension(bazaarResourceServerExtension);
    const resourceUrl = config.publicBaseUrl + PAID_ROUTE.path;
    const units = new WeakMap<object, number>();
    const http = new x402HTTPResourceServer(resourceServer, {
      [`${PAID_ROUTE.method} ${PAID_ROUTE.path}`]: paidRoute(
        x402,
        resourceUrl,
        MAX_TIMEOUT_SECONDS,
        inputSchema,
      ),
      [`${PAID_BATCH_ROUTE.method} ${PAID_BATCH_ROUTE.path}`]: paidBatchRoute(
        x402,
        config.publicBaseUrl + PAID_BATCH_ROUTE.path,
        MAX_TIMEOUT_SECONDS,
        batchInputSchema,
        (context) => units.get(context.adapter) ?? 1,
      ),
    });
    try {
      await http.initialize();
    } catch (error) {
      throw new ConfigError([
        `X402_FACILITATOR_URL: the facilitator at ${x402.facilitatorUrl} cannot take exact payments on ` +
          `${x402.network}: ${clip(describe(error), 300)}`,
      ]);
    }
    const challenge = await terms(http, config.publicBaseUrl, PAID_ROUTE);
    return new PaymentGate(http, x402, resourceUrl, challenge, units);
  }

  /** The terms of a batch of `units` new proofs: the per-proof price times `units`. */
  async batchTerms(units: number, error?: string): Promise<PaymentRequired> {
    const adapter = staticAdapter(this.#batchUrl, PAID_BATCH_ROUTE);
    this.#units.set(adapter, units);
    const challenge = await terms(this.#http, undefined, PAID_BATCH_ROUTE, adapter);
    return error === undefined ? challenge : { ...challenge, error };
  }

  get #batchUrl(): string {
    return this.#resourceUrl.slice(0, -PAID_ROUTE.path.length) + PAID_BATCH_ROUTE.path;
  }

  /** The payment requirements a client must meet (for the discovery documents). */
  get accepts(): PaymentRequirements[] {
    return this.#unpaid.accepts;
  }

  /** Extensions declared on the paid route (the Bazaar discovery `info` and `schema`). */
  get extensions(): Record<string, unknown> {
    return this.#unpaid.extensions ?? {};
  }

  get resourceUrl(): string {
    return this.#resourceUrl;
  }

  /** `x-payment-info` of the paid operation in /openapi.json. */
  get paymentInfo(): Record<string, unknown> {
    return paymentInfo(this.#config);
  }

  /** `x-payment-info` of the paid batch operation. */
  get batchPaymentInfo(): Record<string, unknown> {
    return batchPaymentInfo(this.#config);
  }

  /** The price of one proof, as configured (`$0.005`). */
  get price(): string {
    return this.#config.price;
  }

  /**
   * Runs before the body is read. No payment header, one that does not decode, or one whose
   * authorization is not an `exact` EVM one on our network, or stays valid longer than the terms allow:
   * 402 with the challenge. Otherwise the decoded payment is kept on the request for the handler.
   */
  admit(request: FastifyRequest, nowMs: number): void {
    const attempt = this.#attempt(request, nowMs);
    if (typeof attempt !== 'object') throw this.#paymentRequired(attempt);
    request.payment = attempt;
  }

  /**
   * The same for a batch, once its body is read: the challenge asks the price of `units` proofs (the
   * count of its new items).
   */
  async admitBatch(request: FastifyRequest, nowMs: number, unitsOf: () => number): Promise<void> {
    const attempt = this.#attempt(request, nowMs);
    if (typeof attempt === 'object') {
      request.payment = attempt;
      return;
    }
    const units = unitsOf();
    const total = priceTimes(this.#config.price, units);
    const message =
      attempt === undefined
        ? `Payment required: ${total} (${units} × ${this.#config.price}) in USDC on ${this.#config.network} ` +
          'through x402 v2. Pay the challenge in the PAYMENT-REQUIRED header and retry with PAYMENT-SIGNATURE.'
        : `Payment required: ${attempt}`;
    throw paymentRequiredError(message, await this.batchTerms(units, attempt));
  }

  /** How many proofs a payload's amount pays for at our price: a whole positive number, or undefined. */
  #unitsOf(payload: PaymentPayload): number | undefined {
    const one = this.#unpaid.accepts[0]?.amount;
    const amount = payload.accepted?.amount;
    if (one === undefined || typeof amount !== 'string' || !/^\d{1,30}$/.test(amount)) return undefined;
    const [each, total] = [BigInt(one), BigInt(amount)];
    if (each <= 0n || total <= 0n || total % each !== 0n) return undefined;
    const units = total / each;
    return units <= 1000n ? Number(units) : undefined;
  }

  /** The payment a request's header carries, or why it is refused (undefined: no payment at all). */
  #attempt(request: FastifyRequest, nowMs: number): PaymentAttempt | string | undefined {
    const header = request.headers['payment-signature'];
    const payload = typeof header === 'string' ? decodePayload(header) : undefined;
    if (payload === undefined) return undefined;
    const network = typeof payload.accepted?.network === 'string' ? payload.accepted.network : '';
    if (network !== this.#config.network) return `invalid_network: pay on ${this.#config.network}`;
    const authorization = readAuthorization(network, payload.payload);
    if (authorization === undefined) {
      return 'invalid_payload: not an exact EVM authorization (EIP-3009 or Permit2) with from, nonce and expiry';
    }
    const problem = validityProblem(authorization, nowMs, MAX_TIMEOUT_SECONDS, CLOCK_SKEW_SECONDS);
    if (problem !== undefined) return `invalid_validity: ${problem}`;
    return { payload, authorization };
  }

  /**
   * The payment an admitted request carries (the payment port), for the proofs service to verify and
   * then settle: the settlement hands back the PAYMENT-RESPONSE value, which nothing here keeps.
   */
  paymentOf(request: FastifyRequest): Payment | undefined {
    const attempt = request.payment;
    if (attempt === undefined) return undefined;
    const signedFor = this.#unitsOf(attempt.payload);
    return {
      authorization: attempt.authorization,
      ...(signedFor !== undefined ? { units: signedFor } : {}),
      verify: async (units = 1) => {
        const verified = await this.#verify(request, attempt, units);
        return { settle: () => this.#settle(request, attempt, verified, units) };
      },
    };
  }

  /**
   * Verifies the payment with the facilitator (nothing moves yet). Rejected → 402 with the reason;
   * facilitator unreachable → 502 `payment_unavailable`. Returns what `settle` needs.
   */
  async #verify(request: FastifyRequest, attempt: PaymentAttempt, units: number): Promise<VerifiedTerms> {
    const context = this.#context(request, units);
    let verified;
    try {
      verified = await this.#http.processHTTPRequest(context);
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
    if (verified.type !== 'payment-verified') throw new Error('the notarize route must require payment');
    // The facilitator checked the signature over this payload, so its `from` is the payer.
    const checked = readAuthorization(attempt.authorization.network, verified.paymentPayload.payload);
    if (checked?.payloadDigest !== attempt.authorization.payloadDigest) {
      throw this.#paymentRequired('invalid_payload: the verified payment is not the one sent');
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
  async #settle(
    request: FastifyRequest,
    attempt: PaymentAttempt,
    verified: VerifiedTerms,
    units: number,
  ): Promise<Settlement> {
    let settled;
    try {
      settled = await this.#http.processSettlement(
        verified.payload,
        verified.requirements,
        verified.extensions,
        { request: this.#context(request, units) },
      );
    } catch (error) {
      throw unavailable('settle', error, attempt.authorization);
    }
    if (!settled.success) {
      const response = failedSettlement(settled);
      const reason = `settlement_failed: ${response.errorReason}`;
      const challenge = isBatch(request) ? await this.batchTerms(units, reason) : this.#challenge(reason);
      throw settlementFailed(response, challenge);
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

  #paymentRequired(error: string | undefined): AppError {
    const challenge = this.#challenge(error);
    const message =
      error === undefined
        ? `Payment required: ${this.#config.price} in USDC on ${this.#config.network} through x402 v2. ` +
          'Pay the challenge in the PAYMENT-REQUIRED header and retry with PAYMENT-SIGNATURE.'
        : `Payment required: ${error}`;
    return paymentRequiredError(message, challenge);
  }

  /** The route's challenge, with the reason a payment was refused when there is one. */
  #challenge(error?: string): PaymentRequired {
    return error === undefined ? this.#unpaid : { ...this.#unpaid, error };
  }

  /** The x402 context of a paid request; a batch's carries the count of proofs it pays for. */
  #context(request: FastifyRequest, units: number): HTTPRequestContext {
    const route = isBatch(request) ? PAID_BATCH_ROUTE : PAID_ROUTE;
    const adapter = requestAdapter(request, isBatch(request) ? this.#batchUrl : this.#resourceUrl, route);
    this.#units.set(adapter, units);
    return { adapter, path: route.path, method: request.method };
  }
}

function isBatch(request: FastifyRequest): boolean {
  return request.routeOptions.url === PAID_BATCH_ROUTE.path;
}

/** The x402 `PaymentRequired` the resource server builds for a paid operation without payment. */
async function terms(
  http: x402HTTPResourceServer,
  baseUrl: string | undefined,
  route: PaidOperation,
  adapter = staticAdapter((baseUrl ?? '') + route.path, route),
): Promise<PaymentRequired> {
  const unpaid = await http.processHTTPRequest({ adapter, path: route.path, method: route.method });
  const challenge = unpaid.type === 'payment-error' ? decodeChallenge(unpaid.response.headers) : undefined;
  if (challenge === undefined) throw new Error(`the unpaid route ${route.path} did not produce a challenge`);
  return challenge;
}
