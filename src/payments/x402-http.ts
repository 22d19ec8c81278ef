import type { FastifyRequest } from 'fastify';
import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
  encodePaymentSignatureHeader,
  FacilitatorResponseError,
  FacilitatorTimeoutError,
  type HTTPAdapter,
} from '@x402/core/http';
import type { FacilitatorClient } from '@x402/core/server';
import {
  SettleError,
  VerifyError,
  type PaymentPayload,
  type PaymentRequired,
  type SettleResponse,
} from '@x402/core/types';
import { AppError } from '../errors.ts';
import { X402_VERSION, type PaidOperation } from './terms.ts';

/** Facilitator texts (viem errors carry raw calldata) are cut to this before any client sees them. */
export const FACILITATOR_TEXT_MAX = 160;

/** The x402 side of the payment gate: facilitator outages, header codecs, request adapters and errors. */

/**
 * Tells an outage from a refusal. The facilitator client reports a refusal as VerifyError/SettleError
 * and a malformed answer or timeout as FacilitatorResponseError; anything else it throws (connection
 * refused, a 5xx page) the resource server would turn into a 402, inviting the client to pay again.
 * This wrapper turns those into FacilitatorResponseError, which the gate answers with 502.
 */
export class OutageAwareFacilitator implements FacilitatorClient {
  readonly #inner: FacilitatorClient;
  constructor(inner: FacilitatorClient) {
    this.#inner = inner;
  }
  verify(...args: Parameters<FacilitatorClient['verify']>) {
    return this.#inner.verify(...args).catch(asOutage);
  }
  settle(...args: Parameters<FacilitatorClient['settle']>) {
    return this.#inner.settle(...args).catch(asOutage);
  }
  getSupported() {
    return this.#inner.getSupported();
  }
}

function asOutage(error: unknown): never {
  if (
    error instanceof VerifyError ||
    error instanceof SettleError ||
    error instanceof FacilitatorResponseError
  )
    throw error;
  throw new FacilitatorResponseError(describe(error));
}

export function unavailable(
  step: 'verify' | 'settle',
  error: unknown,
  authorization?: { payer: string; nonce: string },
): AppError {
  const timedOut = error instanceof FacilitatorTimeoutError;
  if (step === 'verify') {
    return new AppError(
      'payment_unavailable',
      `The payment facilitator is unavailable (${timedOut ? 'timed out' : 'no valid answer'}); nothing was charged. Retry later.`,
      { step, reason: clip(describe(error), FACILITATOR_TEXT_MAX) },
      { 'Retry-After': '5' },
    );
  }
  return new AppError(
    'payment_unavailable',
    'The payment facilitator did not confirm the settlement; it may still complete. No proof was made. ' +
      'Retry with the same idempotencyKey: once the payment shows on chain, contact the operator with the payer and nonce.',
    {
      step,
      settlement: 'unknown',
      reason: clip(describe(error), FACILITATOR_TEXT_MAX),
      payer: authorization?.payer ?? null,
      nonce: authorization?.nonce ?? null,
    },
    { 'Retry-After': '5' },
  );
}

export function paymentRequiredError(message: string, challenge: PaymentRequired | undefined): AppError {
  const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
  if (challenge) headers['PAYMENT-REQUIRED'] = encodePaymentRequiredHeader(challenge);
  return new AppError('payment_required', message, { ...(challenge ?? {}) }, headers);
}

export function decodePayload(header: string): PaymentPayload | undefined {
  try {
    const payload = decodePaymentSignatureHeader(header);
    return typeof payload === 'object' && payload !== null && payload.x402Version === X402_VERSION
      ? payload
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A payment given as a JSON value (an MCP call's `_meta["x402/payment"]`) in the form of the HTTP header,
 * so that it is decoded and checked as one: '' for anything but an object.
 */
export function encodedPayload(value: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return '';
  return encodePaymentSignatureHeader(value as PaymentPayload);
}

export function decodeChallenge(headers: Record<string, string>): PaymentRequired | undefined {
  const value = Object.entries(headers).find(([name]) => name.toLowerCase() === 'payment-required')?.[1];
  if (value === undefined) return undefined;
  const challenge = decodePaymentRequiredHeader(value);
  return challenge.error === undefined
    ? challenge
    : { ...challenge, error: clip(challenge.error, FACILITATOR_TEXT_MAX) };
}

export function requestAdapter(
  request: FastifyRequest,
  resourceUrl: string,
  route: PaidOperation,
): HTTPAdapter {
  return {
    getHeader: (name) => {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value[0] : value;
    },
    getMethod: () => request.method,
    getPath: () => route.path,
    getUrl: () => resourceUrl,
    // Always the API answer (JSON envelope), never the reference's HTML paywall.
    getAcceptHeader: () => 'application/json',
    getUserAgent: () => request.headers['user-agent'] ?? '',
  };
}

export function staticAdapter(resourceUrl: string, route: PaidOperation): HTTPAdapter {
  return paymentAdapter(resourceUrl, route, undefined);
}

/** The x402 context of a payment carried other than by an HTTP header (an MCP call's `_meta`). */
export function paymentAdapter(
  resourceUrl: string,
  route: PaidOperation,
  paymentHeader: string | undefined,
): HTTPAdapter {
  return {
    getHeader: (name) => (name.toLowerCase() === 'payment-signature' ? paymentHeader : undefined),
    getMethod: () => route.method,
    getPath: () => route.path,
    getUrl: () => resourceUrl,
    getAcceptHeader: () => 'application/json',
    getUserAgent: () => '',
  };
}

export function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

export function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : oneLine.slice(0, max - 1) + '…';
}

/** A settlement refused on chain, as the client is told of it (the facilitator's texts cut short). */
export function failedSettlement(settled: SettleResponse): SettleResponse {
  return {
    success: false,
    errorReason: clip(settled.errorReason ?? 'settlement_failed', FACILITATOR_TEXT_MAX),
    errorMessage: clip(settled.errorMessage ?? settled.errorReason ?? '', FACILITATOR_TEXT_MAX),
    transaction: settled.transaction,
    network: settled.network,
    ...(settled.payer ? { payer: settled.payer } : {}),
  };
}

/** 402 for a refused settlement: nothing was charged, PAYMENT-RESPONSE says why, a new challenge follows. */
export function settlementFailed(response: SettleResponse, challenge: PaymentRequired): AppError {
  return new AppError(
    'payment_required',
    `The payment could not be settled: ${response.errorReason ?? ''}. Nothing was charged and no proof was made.`,
    { ...challenge, settlement: response },
    {
      'PAYMENT-RESPONSE': encodePaymentResponseHeader(response),
      'PAYMENT-REQUIRED': encodePaymentRequiredHeader(challenge),
      'Cache-Control': 'no-store',
    },
  );
}
