import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import { InclusionProof, InclusionQuery } from '../log/log-schemas.ts';
import { encodeInclusion } from '../log/log-service.ts';
import { ProofIdParams } from './proof-schemas.ts';
import { proofNotFound } from './proofs-service.ts';

const REPLY = 'application/timestamp-reply';

/**
 * The evidence of one proof beyond its signatures (docs/verification.md): its inclusion proof and its
 * C2SP tlog-proof file from the transparency log, and its RFC 3161 time-stamp token.
 */
export async function evidenceRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  const leafIndexOf = async (id: string): Promise<number> => {
    const proof = await ctx.proofs.get(id);
    if (proof === undefined) throw proofNotFound(id);
    if (proof.log === null) {
      throw new AppError(
        'not_yet_integrated',
        'The proof is not in the log yet; it is integrated within about a second. Retry shortly.',
        { id },
        { 'Retry-After': '1' },
      );
    }
    return proof.log.leafIndex;
  };

  api.get(
    '/api/proofs/:id/inclusion',
    {
      schema: {
        summary:
          'Inclusion proof of a proof in the log, against a tree size (the latest checkpoint by default)',
        tags: ['log'],
        params: ProofIdParams,
        querystring: InclusionQuery,
        response: {
          200: { description: 'The inclusion proof', ...InclusionProof },
          ...errorResponses(400, 404, 409, 429),
        },
      },
    },
    async (request) => {
      const leafIndex = await leafIndexOf(request.params.id);
      return encodeInclusion(await ctx.log.inclusion(leafIndex, request.query.treeSize));
    },
  );

  api.get(
    '/api/proofs/:id/tlog-proof',
    {
      schema: {
        summary: 'The self-contained offline proof of inclusion (C2SP tlog-proof)',
        tags: ['log'],
        params: ProofIdParams,
        response: {
          200: { description: 'The tlog-proof file', type: 'string' },
          ...errorResponses(404, 409, 429),
        },
      },
    },
    async (request, reply) => {
      const proof = await ctx.log.tlogProof(await leafIndexOf(request.params.id));
      return reply
        .header('Content-Type', 'text/plain; charset=utf-8')
        .header('Content-Disposition', `attachment; filename="${request.params.id}.tlog-proof"`)
        .header('Cache-Control', 'no-cache')
        .send(proof);
    },
  );

  api.get(
    '/api/proofs/:id/timestamp.tsr',
    {
      schema: {
        summary: 'The RFC 3161 time-stamp token of a proof (TimeStampResp, DER)',
        tags: ['verification'],
        params: ProofIdParams,
        response: {
          200: {
            description: 'The token: `openssl ts -verify -digest <hash> -in it -CAfile <root>` checks it',
            content: { [REPLY]: { schema: { description: 'DER bytes' } } },
          },
          ...errorResponses(404, 429),
        },
      },
    },
    async (request, reply) => {
      const token = await ctx.proofs.timestampToken(request.params.id);
      if (token === undefined) throw proofNotFound(request.params.id);
      if (token === null) {
        throw new AppError('not_found', 'This proof was made before time-stamp tokens existed', {
          id: request.params.id,
        });
      }
      return reply
        .header('Content-Type', REPLY)
        .header('Content-Disposition', `attachment; filename="${request.params.id}.tsr"`)
        .header('Cache-Control', 'public, max-age=31536000, immutable')
        .send(token);
    },
  );
}
