import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { requireScope } from '../http/auth.ts';
import { errorResponses } from '../http/openapi.ts';
import { TSA_QUERY_MAX_BYTES } from './tsa.ts';

const REPLY = 'application/timestamp-reply';
const QUERY = 'application/timestamp-query';
/**
 * The time-stamp authority (docs/decisions.md, "Verifiable proofs: log and time-stamps"): its certificates,
 * and RFC 3161 over HTTP. A proof's own token is served with the proofs (proofs/evidence-routes.ts).
 */
export async function tsaRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  app.addContentTypeParser(QUERY, { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  api.get(
    '/api/tsa/certs.pem',
    {
      schema: {
        summary: 'The TSA certificate followed by the root that issued it (PEM)',
        tags: ['verification'],
        response: {
          200: {
            description: 'The certificate chain',
            content: { 'application/pem-certificate-chain': { schema: { type: 'string' } } },
          },
          ...errorResponses(429),
        },
      },
    },
    async (_request, reply) =>
      reply
        .header('Content-Type', 'application/pem-certificate-chain')
        .header('Cache-Control', 'public, max-age=3600')
        .send(ctx.tsa.chainPem),
  );

  api.post(
    '/api/tsa',
    {
      bodyLimit: TSA_QUERY_MAX_BYTES,
      schema: {
        summary: 'RFC 3161 time-stamping over HTTP: a TimeStampReq in, a TimeStampResp out',
        description:
          'For clients such as `openssl ts -query`. SHA-256, SHA-384 and SHA-512 imprints; nonce and certReq ' +
          'are honoured; at most 1024 bytes (413 beyond). A request that does not parse, or another hash algorithm, ' +
          'gets a TimeStampResp with ' +
          'status rejection (RFC 3161 §2.4.2). Free in demo mode; in x402 mode it needs an API key.',
        tags: ['verification'],
        security: ctx.config.paymentMode === 'x402' ? [{ apiKey: [] }] : [{}, { apiKey: [] }],
        response: {
          200: {
            description: 'The TimeStampResp (DER)',
            content: { [REPLY]: { schema: { description: 'DER bytes' } } },
          },
          ...errorResponses(401, 403, 413, 415, 429),
        },
      },
    },
    async (request, reply) => {
      const apiKey = requireScope(request, 'proofs:write');
      if (ctx.config.paymentMode === 'x402' && apiKey === undefined) {
        throw new AppError('unauthorized', 'In x402 mode the time-stamp endpoint needs an X-Service-Key');
      }
      const body = request.body;
      if (!Buffer.isBuffer(body)) {
        throw new AppError('unsupported_media_type', `Send the body as ${QUERY}`, { expected: QUERY });
      }
      const answer = ctx.tsa.respond(body, new Date(ctx.clock.now()));
      return reply.header('Content-Type', REPLY).header('Cache-Control', 'no-store').send(answer);
    },
  );
}
