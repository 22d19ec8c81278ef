import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { ProofIdParams } from '../proofs/proof-schemas.ts';
import { AnchorList, AnchorListQuery, ProofAnchor } from './anchors-schemas.ts';

/** The anchors of the log and of each proof (docs/api.md, "Anchors"). */
export async function anchorsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/api/log/anchors',
    {
      schema: {
        summary: 'Checkpoints anchored by outside time-stamping authorities and OpenTimestamps calendars',
        tags: ['log'],
        querystring: AnchorListQuery,
        response: {
          200: { description: 'Anchors, newest first', ...AnchorList },
          ...errorResponses(400, 429),
        },
      },
    },
    async (request) => {
      const { limit = 20, cursor } = request.query;
      return ctx.anchors.list(limit, cursor === undefined ? undefined : Number(cursor));
    },
  );

  api.get(
    '/api/proofs/:id/anchors',
    {
      schema: {
        summary: 'The earliest anchored checkpoint that holds a proof, with the proof’s inclusion in it',
        tags: ['verification'],
        params: ProofIdParams,
        response: {
          200: { description: 'The anchor of the proof', ...ProofAnchor },
          ...errorResponses(404, 409, 429),
        },
      },
    },
    async (request) => ctx.anchors.ofProof(request.params.id),
  );

  api.get(
    '/api/proofs/:id/proof.ots',
    {
      schema: {
        summary: 'An OpenTimestamps file of the caller’s own file, through the proof’s anchored checkpoint',
        tags: ['verification'],
        params: ProofIdParams,
        response: {
          200: {
            description:
              'A detached OpenTimestamps file: `ots verify -d <contentHash hex> <id>.ots` checks it',
            content: { 'application/octet-stream': { schema: { description: 'The .ots bytes' } } },
          },
          ...errorResponses(404, 409, 429),
        },
      },
    },
    async (request, reply) => {
      const file = await ctx.anchors.otsFile(request.params.id);
      return reply
        .header('Content-Type', 'application/octet-stream')
        .header('Content-Disposition', `attachment; filename="${request.params.id}.ots"`)
        .header('Cache-Control', 'no-cache')
        .send(file);
    },
  );
}
