import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { PAID_BATCH_ROUTE, PAID_ROUTE, PAID_TOOL, PAID_TOOL_RESOURCE, X402_VERSION } from './terms.ts';

/**
 * How payment-protocol directories find the paid operation (docs/payments.md, "Discovery"): the
 * origin-hosted `/.well-known/x402` (the x402scan shape, a superset with the full requirements),
 * `/api/discovery` (the Bazaar `DiscoveryResourcesResponse` envelope), and `x-payment-info` on the
 * operation in `/openapi.json`. Every figure comes from the payment gate, which built it with the
 * official packages.
 */

const Requirements = Type.Object(
  {
    scheme: Type.String(),
    network: Type.String(),
    amount: Type.String({ description: 'Atomic units of the asset (USDC has 6 decimals: 5000 = $0.005).' }),
    asset: Type.String(),
    payTo: Type.String(),
    maxTimeoutSeconds: Type.Integer(),
    extra: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: true },
);

const DiscoveryResource = Type.Object(
  {
    resource: Type.String({
      format: 'uri',
      description: 'The URL of an HTTP operation, or `mcp://tool/<name>` for an MCP tool.',
    }),
    type: Type.Union([Type.Literal('http'), Type.Literal('mcp')]),
    method: Type.Optional(Type.String({ description: 'The HTTP method (type `http`).' })),
    toolName: Type.Optional(Type.String({ description: 'The MCP tool (type `mcp`).' })),
    transport: Type.Optional(
      Type.Literal('streamable-http', { description: 'How the MCP endpoint is reached (type `mcp`).' }),
    ),
    endpoint: Type.Optional(
      Type.String({ format: 'uri', description: 'The MCP endpoint that serves the tool (type `mcp`).' }),
    ),
    x402Version: Type.Integer(),
    accepts: Type.Array(Requirements),
    lastUpdated: Type.String({ format: 'date-time' }),
    description: Type.String(),
    mimeType: Type.String(),
    serviceName: Type.String(),
    tags: Type.Array(Type.String()),
    extensions: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'The Bazaar discovery extension: `bazaar.info` (example input/output) and `bazaar.schema`.',
    }),
  },
  { additionalProperties: true },
);

const WellKnown = Type.Object({
  version: Type.Literal(1, { description: 'Version of this document format (the x402scan discovery file).' }),
  x402Version: Type.Integer(),
  mode: Type.Union([Type.Literal('demo'), Type.Literal('x402')]),
  resources: Type.Array(Type.String({ format: 'uri' }), {
    description: 'URLs of the paid HTTP resources (the MCP tool is among `items`).',
  }),
  items: Type.Array(DiscoveryResource),
  instructions: Type.String(),
});

const DiscoveryList = Type.Object({
  x402Version: Type.Integer(),
  mode: Type.Union([Type.Literal('demo'), Type.Literal('x402')]),
  items: Type.Array(DiscoveryResource),
  pagination: Type.Object({ limit: Type.Integer(), offset: Type.Integer(), total: Type.Integer() }),
});

type Resource = Static<typeof DiscoveryResource>;

/** `x-payment-info` of the paid operation in `/openapi.json` (the x402scan convention). */
function paidResources(ctx: AppContext, startedAt: string): Resource[] {
  const gate = ctx.payments;
  if (gate === undefined) return [];
  return [
    {
      resource: gate.resourceUrl,
      type: 'http',
      method: PAID_ROUTE.method,
      x402Version: X402_VERSION,
      accepts: gate.accepts,
      lastUpdated: startedAt,
      description: 'Create a timestamped proof of a SHA-256 hash (signed, logged, RFC 3161 token).',
      mimeType: 'application/json',
      serviceName: 'hashproof',
      tags: ['timestamp', 'notary', 'proof', 'sha256', 'transparency-log'],
      extensions: gate.extensions,
    },
    {
      resource: gate.batchResource.url,
      type: 'http',
      method: PAID_BATCH_ROUTE.method,
      x402Version: X402_VERSION,
      accepts: gate.batchResource.accepts,
      lastUpdated: startedAt,
      description:
        `Create up to 1,000 proofs in one request, at ${gate.price} per new item: the amount above is for ` +
        'one; the challenge of a batch asks the price times the count of its items not already answered.',
      mimeType: 'application/json',
      serviceName: 'hashproof',
      tags: ['timestamp', 'notary', 'proof', 'sha256', 'batch'],
      extensions: gate.batchResource.extensions,
    },
    {
      resource: PAID_TOOL_RESOURCE,
      type: 'mcp',
      toolName: PAID_TOOL.tool,
      transport: 'streamable-http',
      endpoint: ctx.config.publicBaseUrl + PAID_TOOL.path,
      x402Version: X402_VERSION,
      accepts: gate.toolTerms().accepts,
      lastUpdated: startedAt,
      description:
        `The MCP tool notarize of ${PAID_TOOL.path} (Streamable HTTP): one proof at the same price, paid ` +
        'with x402 over MCP (the payment in params._meta["x402/payment"]).',
      mimeType: 'application/json',
      serviceName: 'hashproof',
      tags: ['timestamp', 'notary', 'proof', 'sha256', 'mcp'],
      extensions: gate.toolTerms().extensions ?? {},
    },
  ];
}

export async function discoveryRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const startedAt = new Date(ctx.clock.now()).toISOString();
  const mode = ctx.config.paymentMode;
  const instructions =
    mode === 'x402'
      ? `POST ${PAID_ROUTE.path} with a JSON body {contentHash, label, metadata?, idempotencyKey}. ` +
        'An unpaid call is answered 402 with the x402 v2 challenge in the PAYMENT-REQUIRED header; pay it ' +
        'and repeat the call with PAYMENT-SIGNATURE. The proof comes back with PAYMENT-RESPONSE. ' +
        `Up to 1,000 proofs at once: POST ${PAID_BATCH_ROUTE.path} with {items: [those bodies]}; its ` +
        'challenge asks the price times the count of items not already answered. ' +
        `Agents: the MCP tool notarize of ${PAID_TOOL.path} answers the same terms as a tool error and takes ` +
        'the payment in params._meta["x402/payment"] (x402 over MCP). ' +
        'Accounts with an API key (X-Service-Key) create proofs without paying per call.'
      : 'This instance runs in demo mode: proof creation is free and needs no payment, so it lists no paid ' +
        `resource. POST ${PAID_ROUTE.path} with {contentHash, label, metadata?, idempotencyKey}.`;

  api.get(
    '/.well-known/x402',
    {
      schema: {
        summary: 'x402 discovery document: the paid resources of this origin and their terms',
        tags: ['discovery'],
        response: { 200: { description: 'Discovery document', ...WellKnown }, ...errorResponses(429) },
      },
    },
    async (_request, reply) => {
      const items = paidResources(ctx, startedAt);
      void reply.header('Cache-Control', 'public, max-age=300');
      return {
        version: 1 as const,
        x402Version: X402_VERSION,
        mode,
        resources: items.filter((item) => item.type === 'http').map((item) => item.resource),
        items,
        instructions,
      };
    },
  );

  api.get(
    '/api/discovery',
    {
      schema: {
        summary: 'Discovery metadata for payment-protocol directories (Bazaar resource list)',
        tags: ['discovery'],
        response: { 200: { description: 'Paid resources', ...DiscoveryList }, ...errorResponses(429) },
      },
    },
    async (_request, reply) => {
      const items = paidResources(ctx, startedAt);
      void reply.header('Cache-Control', 'public, max-age=300');
      return {
        x402Version: X402_VERSION,
        mode,
        items,
        pagination: { limit: items.length, offset: 0, total: items.length },
      };
    },
  );
}
