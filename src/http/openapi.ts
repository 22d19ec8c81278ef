import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.keys(ERROR_STATUS) }),
      message: Type.String(),
      details: Type.Object({}, { additionalProperties: true }),
    }),
  },
  { $id: 'ErrorEnvelope' },
);

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (`invalid_request`, `invalid_json`)',
  401: 'Missing or wrong credentials (`unauthorized`)',
  402: 'Payment required (`payment_required`)',
  403: 'The key lacks the scope (`forbidden`)',
  404: 'Not found (`not_found`)',
  409: 'Conflict (`idempotency_key_in_use`, `not_yet_integrated`)',
  413: 'Body larger than the operation accepts (`payload_too_large`)',
  415: 'Body is not JSON (`unsupported_media_type`)',
  422: 'Idempotency key reused with other content (`idempotency_key_reused`)',
  429: 'Rate limited (`rate_limited`); see Retry-After',
  502: 'Payment facilitator unavailable (`payment_unavailable`)',
  503: 'Temporarily unavailable (`service_unavailable`); see Retry-After',
};

/** The error responses of an operation, each a reference to the one envelope schema. */
export function errorResponses(...statuses: number[]): Record<number, object> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: DESCRIPTIONS[status] ?? 'Error', ...Type.Ref('ErrorEnvelope') },
    ]),
  );
}

/** Shared schemas, and the OpenAPI 3.1 document generated from every route's own schema. */
export async function registerOpenApi(
  app: FastifyInstance,
  options: { publicBaseUrl: string; version: string; sharedSchemas: object[]; isPaid: boolean },
): Promise<void> {
  app.addSchema(ErrorEnvelope);
  for (const schema of options.sharedSchemas) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'hashproof',
        version: options.version,
        description:
          'Timestamped hash proofs: send a SHA-256 and get a signed, timestamped proof that it existed then.',
      },
      servers: [{ url: options.publicBaseUrl }],
      components: {
        securitySchemes: {
          adminKey: { type: 'apiKey', in: 'header', name: 'X-Service-Admin-Key' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Service-Key' },
          ...(options.isPaid
            ? {
                x402: {
                  type: 'apiKey',
                  in: 'header',
                  name: 'PAYMENT-SIGNATURE',
                  description:
                    'An x402 v2 payment (base64 JSON PaymentPayload) answering the 402 challenge of PAYMENT-REQUIRED.',
                },
              }
            : {}),
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
  });
  let document: string | undefined;
  app.get(
    '/openapi.json',
    {
      schema: {
        summary: 'This OpenAPI 3.1 document',
        tags: ['service'],
        response: {
          200: {
            description: 'The OpenAPI document of every route',
            type: 'object',
            additionalProperties: true,
          },
          ...errorResponses(429),
        },
      },
    },
    // Built once, on the first request (every route is registered by then): building it took about
    // 5 ms, on the thread that answers every request.
    async (_request, reply) => {
      document ??= JSON.stringify(app.swagger());
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );
}
