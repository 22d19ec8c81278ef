import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.ts';
import type { AppError } from '../errors.ts';
import { serverFault } from '../http/error-handler.ts';
import { isAppError } from '../errors.ts';
import { PAYMENT_META, PAYMENT_RESPONSE_META } from '../payments/terms.ts';
import type { PaymentGate } from '../payments/x402.ts';
import { answer, notarized, toolError, type ToolCaller } from './mcp-results.ts';
import { SettledNotStored } from './paid-requests.ts';
import type { NotarizeBody } from './proof-schemas.ts';

/**
 * `notarize` paid with x402 over MCP (docs/payments.md, "x402 over MCP"): the payment rides in
 * `params._meta["x402/payment"]` and is taken through the same paid path as `POST /api/proof/notarize`
 * (the same terms, one authorization for one proof whichever transport carries it, replays by
 * idempotency key free); the receipt comes back in `result._meta["x402/payment-response"]`.
 */
export async function paidNotarize(
  ctx: AppContext,
  gate: PaymentGate,
  body: NotarizeBody,
  caller: ToolCaller,
): Promise<CallToolResult> {
  const payment = gate.toolPayment(caller.meta?.[PAYMENT_META], ctx.clock.now());
  const { network, payer } = payment.authorization;
  try {
    const { proof, isReplay, paymentResponse } = await ctx.proofs.notarize(
      body,
      { kind: 'payer', network, payer },
      { payment },
    );
    const result = answer(notarized(ctx, proof, isReplay));
    return paymentResponse === undefined ? result : withReceipt(gate, result, paymentResponse);
  } catch (error) {
    if (!(error instanceof SettledNotStored)) throw error;
    // The payment moved but the proof was not stored: the payer keeps its receipt; the operator
    // reconciles from the same value in the log.
    caller.log.error(
      { err: error.cause, payment: error.paymentResponse },
      'payment settled but the proof was not stored',
    );
    const cause = isAppError(error.cause) ? error.cause : serverFault(error.cause);
    return withReceipt(gate, toolError(cause), error.paymentResponse);
  }
}

function withReceipt(gate: PaymentGate, result: CallToolResult, paymentResponse: string): CallToolResult {
  return { ...result, _meta: { ...result._meta, [PAYMENT_RESPONSE_META]: gate.receiptOf(paymentResponse) } };
}

/**
 * A refused payment, as the x402 MCP transport answers it: a tool error whose `structuredContent` is
 * the `PaymentRequired` (the tool's terms and why, with the failed settlement when there was one), whose
 * `content[0].text` is the same wrapped in `x402/error`, and whose `content[1].text` is the API's error
 * envelope.
 */
export function paymentRequired(gate: PaymentGate, error: AppError): CallToolResult {
  const { settlement, ...details } = error.details;
  const required =
    'accepts' in details
      ? details
      : {
          ...gate.toolTerms(typeof details.reason === 'string' ? details.reason : 'payment_required'),
          ...details,
        };
  const data = settlement === undefined ? required : { ...required, [PAYMENT_RESPONSE_META]: settlement };
  const wrapped = { 'x402/error': { code: 402, message: error.message, data } };
  return {
    isError: true,
    structuredContent: data,
    content: [
      { type: 'text', text: JSON.stringify(wrapped) },
      { type: 'text', text: JSON.stringify(error.toEnvelope()) },
    ],
  };
}
