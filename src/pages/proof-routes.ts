import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../context.ts';
import { isProofId } from '../core/ids.ts';
import { errorResponses } from '../http/openapi.ts';
import { renderBadge } from './badge-svg.ts';
import { htmlResponses, sendHtml } from './layout.ts';
import { encodeInclusion } from '../log/log-service.ts';
import { renderProofNotFound, renderProofPage } from './proof-page.ts';

/** Any string: an id that is not a proof id gets the friendly 404 page, not a validation error. */
const PageParams = Type.Object({ id: Type.String({ description: 'The proof id, `proof_…`.' }) });

/** The public badge page of a proof and its embeddable SVG badge (docs/pages.md). */
export async function proofPageRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const find = async (id: string) => (isProofId(id) ? ctx.proofs.get(id) : undefined);

  api.get(
    '/proof/:id',
    {
      schema: {
        summary: 'The public badge page of a proof (HTML)',
        tags: ['pages'],
        params: PageParams,
        response: {
          ...htmlResponses('The proof page', { 404: 'A page saying that no such proof exists' }),
          ...errorResponses(429),
        },
      },
    },
    async (request, reply) => {
      const proof = await find(request.params.id);
      if (proof === undefined)
        return sendHtml(reply, renderProofNotFound(ctx.config, request.params.id), 404);
      const checkedAt = new Date(ctx.clock.now()).toISOString();
      const [inclusion, anchor] = await Promise.all([
        proof.log === null ? undefined : ctx.log.inclusion(proof.log.leafIndex).then(encodeInclusion),
        ctx.anchors.anchorOf(proof),
      ]);
      return sendHtml(
        reply,
        renderProofPage(ctx.config, proof, checkedAt, {
          inclusion,
          anchor,
          anchorsEnabled: ctx.anchors.enabled,
        }),
      );
    },
  );

  api.get(
    '/proof/:id/badge.svg',
    {
      schema: {
        summary: 'The embeddable SVG badge of a proof',
        description:
          'Green when the signature verifies now, red when it does not; a grey "not found" badge with ' +
          'status 404 for an unknown id. Embeddable from any site (`Cross-Origin-Resource-Policy: cross-origin`).',
        tags: ['pages'],
        params: PageParams,
        response: {
          200: { description: 'The badge', content: { 'image/svg+xml': { schema: { type: 'string' } } } },
          404: {
            description: 'A "not found" badge',
            content: { 'image/svg+xml': { schema: { type: 'string' } } },
          },
          ...errorResponses(429),
        },
      },
    },
    async (request, reply) => {
      const proof = await find(request.params.id);
      void reply
        .type('image/svg+xml; charset=utf-8')
        .header('Cross-Origin-Resource-Policy', 'cross-origin')
        .header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
        .header('Cache-Control', 'public, max-age=300');
      if (proof === undefined) {
        return reply
          .code(404)
          .send(
            renderBadge({ state: 'not_found', message: 'not found', title: 'hashproof: proof not found' }),
          );
      }
      const day = proof.timestamp.slice(0, 10);
      const svg = proof.verified
        ? renderBadge({
            state: 'verified',
            message: `verified ${day}`,
            title: `hashproof: "${proof.label}" proven ${proof.timestamp}, signature verified`,
          })
        : renderBadge({
            state: 'invalid',
            message: 'signature invalid',
            title: `hashproof: "${proof.label}": the signature does not verify`,
          });
      return reply.send(svg);
    },
  );
}
