import type { RouteConfig } from '@x402/core/http';
import { declareDiscoveryExtension } from '@x402/extensions/bazaar';
import type { X402Config } from '../config.ts';
import { X402_VERSION } from './terms.ts';

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
    accepts: {
      scheme: 'exact',
      price: x402.price,
      network: x402.network as `${string}:${string}`,
      payTo: x402.payTo,
      maxTimeoutSeconds: maxTimeoutSeconds,
    },
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
