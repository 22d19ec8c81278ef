import type { FastifyRequest } from 'fastify';
import { decodePaymentResponseHeader, HTTPFacilitatorClient, x402HTTPResourceServer } from '@x402/core/http';
import { x402ResourceServer, type FacilitatorClient } from '@x402/core/server';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { bazaarResourceServerExtension } from '@x402/extensions/bazaar';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { createCdpAuthHeaders } from '@coinbase/x402';
import { ConfigError, type Config, type X402Config } from '../config.ts';
import type { AppError } from '../errors.ts';
import {
  PAID_BATCH_ROUTE,
  PAID_ROUTE,
  PAID_TOOL,
  PAID_TOOL_RESOURCE,
  PAYMENT_META,
  priceTimes,
  type PaidOperation,
} from './terms.ts';
import { batchPaymentInfo, paidBatchRoute, paidRoute, paidToolRoute, paymentInfo } from './x402-route.ts';
import {
  clip,
  decodeChallenge,
  decodePayload,
  describe,
  encodedPayload,
  paymentAdapter,
  OutageAwareFacilitator,
  paymentRequiredError,
  requestAdapter,
  staticAdapter,
} from './x402-http.ts';
import type { Payment } from '../core/payment-authorization.ts';
import { MAX_TIMEOUT_SECONDS, PaidPath, type PaidBinding, type PaymentAttempt } from './x402-paid-path.ts';

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
    toolUnpaid: PaymentRequired,
    units: WeakMap<object, number>,
  ) {
    this.#http = http;
    this.#config = config;
    this.#resourceUrl = resourceUrl;
    this.#unpaid = unpaid;
    this.#units = units;
    this.#toolUnpaid = toolUnpaid;
    this.#path = new PaidPath(http, config, () => unpaid.accepts[0]?.amount);
  }

  /** The path every payment takes: held to our terms, verified, settled. */
  readonly #path: PaidPath;

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
      [`${PAID_TOOL.method} ${PAID_TOOL.path}`]: paidToolRoute(x402, MAX_TIMEOUT_SECONDS, inputSchema),
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
    const toolChallenge = await terms(
      http,
      undefined,
      PAID_TOOL,
      staticAdapter(PAID_TOOL_RESOURCE, PAID_TOOL),
    );
    const gate = new PaymentGate(http, x402, resourceUrl, challenge, toolChallenge, units);
    gate.#batchUnpaid = await gate.batchTerms(1);
    return gate;
  }

  /** The terms of the paid MCP tool (x402 over MCP): those of one proof, for `mcp://tool/notarize`. */
  readonly #toolUnpaid: PaymentRequired;

  /** The MCP tool's terms, with the reason a payment was refused when there is one. */
  toolTerms(error?: string): PaymentRequired {
    return error === undefined ? this.#toolUnpaid : { ...this.#toolUnpaid, error };
  }

  /**
   * The payment of an MCP tool call (`params._meta["x402/payment"]`, docs/payments.md "x402 over MCP"),
   * held to the checks of the HTTP header and taken through the same paid path. None, or one that is
   * refused before the facilitator is asked: 402 with the tool's terms.
   */
  toolPayment(value: unknown, nowMs: number): Payment {
    const header = encodedPayload(value);
    const payload = decodePayload(header);
    const attempt = payload && this.#path.attempt(payload, nowMs, this.#toolBinding(header));
    if (typeof attempt === 'object') return this.#path.payment(attempt);
    const message =
      attempt === undefined
        ? `Payment required: ${this.#config.price} in USDC on ${this.#config.network} through x402 v2. ` +
          `Pay one of "accepts" and call the tool again with the PaymentPayload in params._meta["${PAYMENT_META}"].`
        : `Payment required: ${attempt}`;
    throw paymentRequiredError(message, this.toolTerms(attempt));
  }

  /** A receipt (the PAYMENT-RESPONSE value) as the x402 MCP transport sends it: the SettleResponse. */
  receiptOf(paymentResponse: string): Record<string, unknown> {
    return { ...decodePaymentResponseHeader(paymentResponse) };
  }

  #toolBinding(paymentHeader: string): PaidBinding {
    const adapter = paymentAdapter(PAID_TOOL_RESOURCE, PAID_TOOL, paymentHeader);
    return {
      context: () => ({ adapter, path: PAID_TOOL.path, method: PAID_TOOL.method }),
      challenge: (_units, error) => Promise.resolve(this.toolTerms(error)),
    };
  }

  /** The batch route's terms for one proof (its price is per new item), for the discovery documents. */
  #batchUnpaid: PaymentRequired | undefined;

  /** The paid batch resource as directories list it: its URL, its per-item terms and its extensions. */
  get batchResource(): { url: string; accepts: PaymentRequirements[]; extensions: Record<string, unknown> } {
    const unpaid = this.#batchUnpaid;
    if (unpaid === undefined) throw new Error('the gate is not created yet');
    return { url: this.#batchUrl, accepts: unpaid.accepts, extensions: unpaid.extensions ?? {} };
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
    const attempt = this.#requestAttempt(request, nowMs);
    if (typeof attempt !== 'object') throw this.#paymentRequired(attempt);
    request.payment = attempt;
  }

  /**
   * The same for a batch, once its body is read: the challenge asks the price of `units` proofs (the
   * count of its new items).
   */
  async admitBatch(request: FastifyRequest, nowMs: number, unitsOf: () => number): Promise<void> {
    const attempt = this.#requestAttempt(request, nowMs);
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

  /** The payment a request's header carries, or why it is refused (undefined: no payment at all). */
  #requestAttempt(request: FastifyRequest, nowMs: number): PaymentAttempt | string | undefined {
    const header = request.headers['payment-signature'];
    const payload = typeof header === 'string' ? decodePayload(header) : undefined;
    return payload && this.#path.attempt(payload, nowMs, this.#requestBinding(request));
  }

  /** A paid HTTP request's binding: the notarize or the batch route. */
  #requestBinding(request: FastifyRequest): PaidBinding {
    const batch = isBatch(request);
    const route = batch ? PAID_BATCH_ROUTE : PAID_ROUTE;
    const url = batch ? this.#batchUrl : this.#resourceUrl;
    return {
      context: (units) => {
        const adapter = requestAdapter(request, url, route);
        this.#units.set(adapter, units);
        return { adapter, path: route.path, method: request.method };
      },
      challenge: (units, error) =>
        batch ? this.batchTerms(units, error) : Promise.resolve(this.#challenge(error)),
    };
  }

  /**
   * The payment an admitted request carries (the payment port), for the proofs service to verify and
   * then settle: the settlement hands back the PAYMENT-RESPONSE value, which nothing here keeps.
   */
  paymentOf(request: FastifyRequest): Payment | undefined {
    return request.payment && this.#path.payment(request.payment);
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
