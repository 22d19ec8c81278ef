import { NOTARIZE_PATH } from '../core/api-paths.ts';

/** The paid operation and protocol version (docs/payments.md), without loading the payment packages. */
export const PAID_ROUTE = { method: 'POST', path: NOTARIZE_PATH } as const;
export const X402_VERSION = 2;
