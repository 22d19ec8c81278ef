import type { HTTPRequestContext, PaymentOption, RouteConfig } from '@x402/core/http';
import { declareDiscoveryExtension } from '@x402/extensions/bazaar';
import type { X402Config } from '../config.ts';
import { PAID_TOOL, PAID_TOOL_RESOURCE, priceTimes, X402_VERSION } from './terms.ts';

const SERVICE_NAME = 'hashproof';
const DESCRIPTION =
  'Timestamped proof that a SHA-256 hash existed: signed (HMAC and Ed25519), logged in an append-only ' +
  'Merkle log, with an RFC 3161 token. Send only the hash, a label and an idempotency key.';

const EXAMPLE_BODY = {
  contentHash: 'sha256:' + 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  label: 'build artifact v1.2.3',
  metadata: { repo: 'example/app', commit: 'abc1234' },
  idempotencyKey: 'build-1234',
};

/** The `exact` terms every paid operation offers: the configured network and payee, at `price`. */
function exactTerms(
  x402: X402Config,
  maxTimeoutSeconds: number,
  price: PaymentOption['price'],
): PaymentOption {
  return {
    scheme: 'exact',
    price,
    network: x402.network as `${string}:${string}`,
    payTo: x402.payTo,
    maxTimeoutSeconds,
  };
}

/**
 * The paid route as the x402 resource server declares it: the terms (exact scheme, price, network,
 * payee, how long an authorization may stay valid) and the Bazaar discovery extension that describes
 * its input and output to payment directories.
 */
export function paidRoute(
  x402: X402Config,
  resourceUrl: string,
  maxTimeoutSeconds: number,
  inputSchema: object,
): RouteConfig {
  return {
    accepts: exactTerms(x402, maxTimeoutSeconds, x402.price),
    resource: resourceUrl,
    description: DESCRIPTION,
    mimeType: 'application/json',
    serviceName: SERVICE_NAME,
    tags: ['timestamp', 'notary', 'proof', 'sha256', 'transparency-log'],
    extensions: declareDiscoveryExtension({
      bodyType: 'json',
      input: EXAMPLE_BODY,
      inputSchema: JSON.parse(JSON.stringify(inputSchema)) as Record<string, unknown>,
      output: {
        example: {
          ok: true,
          mode: 'x402',
          idempotentReplay: false,
          proof: { id: 'proof_01JZ0000000000000000000000', contentHash: EXAMPLE_BODY.contentHash },
          links: { proof: '/proof/proof_01JZ…', verify: '/api/verify/proofs/proof_01JZ…' },
        },
      },
    }),
  };
}

/** `x-payment-info` of the paid operation in /openapi.json (the OpenAPI payment extension). */
export function paymentInfo(x402: X402Config): Record<string, unknown> {
  return {
    protocols: ['x402'],
    price: { mode: 'fixed', currency: 'USD', amount: x402.price.replace(/^\$/, '') },
    x402Version: X402_VERSION,
    scheme: 'exact',
    network: x402.network,
  };
}

const BATCH_DESCRIPTION =
  'Up to 1,000 timestamped proofs in one request, each answered as the single proof route would ' +
  'answer it. The price is the per-proof price times the count of items not already answered.';

/**
 * The paid batch route: the same terms as one proof, at the per-proof price times the count of the
 * batch's new items (`unitsOf`, known once the body is read), with its own discovery description.
 */
export function paidBatchRoute(
  x402: X402Config,
  resourceUrl: string,
  maxTimeoutSeconds: number,
  inputSchema: object,
  unitsOf: (context: HTTPRequestContext) => number,
): RouteConfig {
  return {
    accepts: exactTerms(x402, maxTimeoutSeconds, (context) => priceTimes(x402.price, unitsOf(context))),
    resource: resourceUrl,
    description: BATCH_DESCRIPTION,
    mimeType: 'application/json',
    serviceName: SERVICE_NAME,
    tags: ['timestamp', 'notary', 'proof', 'sha256', 'batch'],
    extensions: declareDiscoveryExtension({
      bodyType: 'json',
      input: { items: [EXAMPLE_BODY] },
      inputSchema: JSON.parse(JSON.stringify(inputSchema)) as Record<string, unknown>,
      output: {
        example: {
          ok: true,
          mode: 'x402',
          items: [
            {
              ok: true,
              idempotentReplay: false,
              proof: { id: 'proof_01JZ0000000000000000000000', contentHash: EXAMPLE_BODY.contentHash },
              links: { proof: '/proof/proof_01JZ…', verify: '/api/verify/proofs/proof_01JZ…' },
              evidence: { timestampToken: 'MIIH…' },
            },
          ],
        },
      },
    }),
  };
}

/** `x-payment-info` of the paid batch operation: the price is per proof, times the count of new items. */
export function batchPaymentInfo(x402: X402Config): Record<string, unknown> {
  const single = paymentInfo(x402);
  return {
    ...single,
    price: { mode: 'per_item', currency: 'USD', amount: x402.price.replace(/^\$/, ''), unit: 'proof' },
  };
}

const TOOL_DESCRIPTION =
  'MCP tool `notarize` of the Streamable HTTP endpoint /mcp: a timestamped proof that a SHA-256 hash ' +
  'existed (signed, logged, RFC 3161 token), at the price of the HTTP route. Unpaid, the tool answers ' +
  'these terms; pay one and call again with the payment in params._meta["x402/payment"].';

/**
 * The paid MCP tool as the x402 resource server declares it: the terms of the HTTP route (one proof at
 * the same price) and the Bazaar discovery extension of an MCP tool (input type `mcp`, the tool's name,
 * its transport and input schema).
 */
export function paidToolRoute(x402: X402Config, maxTimeoutSeconds: number, inputSchema: object): RouteConfig {
  return {
    accepts: exactTerms(x402, maxTimeoutSeconds, x402.price),
    resource: PAID_TOOL_RESOURCE,
    description: TOOL_DESCRIPTION,
    mimeType: 'application/json',
    serviceName: SERVICE_NAME,
    tags: ['timestamp', 'notary', 'proof', 'sha256', 'mcp'],
    extensions: declareDiscoveryExtension({
      toolName: PAID_TOOL.tool,
      description: TOOL_DESCRIPTION,
      transport: 'streamable-http',
      inputSchema: JSON.parse(JSON.stringify(inputSchema)) as Record<string, unknown>,
      example: EXAMPLE_BODY,
      output: {
        example: {
          ok: true,
          idempotentReplay: false,
          proof: { id: 'proof_01JZ0000000000000000000000', contentHash: EXAMPLE_BODY.contentHash },
          links: { proof: '/proof/proof_01JZ…', verify: '/api/verify/proofs/proof_01JZ…' },
        },
      },
    }),
  };
}
