/** The paid operation and protocol version (docs/payments.md), without loading the payment packages. */
export const PAID_ROUTE = { method: 'POST', path: '/api/proof/notarize' } as const;
export const X402_VERSION = 2;
