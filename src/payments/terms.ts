import { BATCH_PATH, NOTARIZE_PATH } from '../core/api-paths.ts';
import { MCP_PATH } from '../core/mcp-names.ts';

/** The paid operation and protocol version (docs/payments.md), without loading the payment packages. */
export const PAID_ROUTE = { method: 'POST', path: NOTARIZE_PATH } as const;
/** The paid batch operation: the price times the count of the batch's new items. */
export const PAID_BATCH_ROUTE = { method: 'POST', path: BATCH_PATH } as const;

/** A paid operation, as the x402 resource server routes it. */
export interface PaidOperation {
  readonly method: string;
  readonly path: string;
}

/**
 * The price of `units` proofs, in the form of the configured price (`$0.005` × 3 = `$0.015`): exact
 * decimal arithmetic, never floating point.
 */
export function priceTimes(price: string, units: number): string {
  const match = /^\$(\d+)(?:\.(\d+))?$/.exec(price);
  if (match === null) throw new Error(`not a price: ${price}`);
  const decimals = match[2] ?? '';
  const scaled = BigInt((match[1] ?? '0') + decimals) * BigInt(units);
  if (decimals.length === 0) return `$${scaled}`;
  const digits = scaled.toString().padStart(decimals.length + 1, '0');
  return `$${digits.slice(0, -decimals.length)}.${digits.slice(-decimals.length)}`;
}
export const X402_VERSION = 2;

/**
 * The paid MCP tool (`notarize` of `/mcp`, paid with x402 over MCP). The x402 resource server routes
 * it under this method and path; the resource it names is `mcp://tool/notarize`, as the x402 MCP
 * transport names a tool.
 */
export const PAID_TOOL = { method: 'POST', path: MCP_PATH, tool: 'notarize' } as const;
export const PAID_TOOL_RESOURCE = `mcp://tool/${PAID_TOOL.tool}`;
/** Where an MCP tool call carries its payment and its result the receipt (`_meta` keys). */
export const PAYMENT_META = 'x402/payment';
export const PAYMENT_RESPONSE_META = 'x402/payment-response';
