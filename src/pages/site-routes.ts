import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { gatherFacts } from './facts.ts';
import { renderDemo, renderHome } from './home-pages.ts';
import { renderActions, renderAgents, renderPricing } from './info-pages.ts';
import { htmlResponses, sendHtml } from './layout.ts';
import { renderProofsList } from './proofs-list-page.ts';
import { buildMarketplace, buildTrust } from './service-documents.ts';
import { renderMarketplace, renderTrust } from './trust-pages.ts';

/** How many proofs the home page and the /proofs page show. */
const HOME_PROOF_COUNT = 5;
const LIST_PAGE_SIZE = 25;

const ProofsPageQuery = Type.Object({
  q: Type.Optional(
    Type.String({ maxLength: 200, description: 'As `q` of /api/proofs/search; empty lists all.' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 40, pattern: '^[A-Za-z0-9_-]+$' })),
});

/** The public pages besides the proof pages and the dashboard (docs/pages.md). */
export async function sitePageRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const facts = () => gatherFacts(ctx, app.initialConfig.bodyLimit ?? 0);
  const page = (summary: string) => ({
    schema: { summary, tags: ['pages'], response: { ...htmlResponses(summary), ...errorResponses(429) } },
  });

  api.get('/', page('Home page (HTML)'), async (_request, reply) => {
    const [summary, latest] = await Promise.all([ctx.stats.summary(), ctx.stats.newest(HOME_PROOF_COUNT)]);
    return sendHtml(reply, renderHome(facts(), summary, latest));
  });

  api.get(
    '/demo',
    page('Demo: hash a file in the browser and create a proof (HTML)'),
    async (_request, reply) => sendHtml(reply, renderDemo(facts())),
  );

  api.get(
    '/proofs',
    {
      schema: {
        summary: 'Recent proofs and search (HTML)',
        tags: ['pages'],
        querystring: ProofsPageQuery,
        response: { ...htmlResponses('The list'), ...errorResponses(400, 429) },
      },
    },
    async (request, reply) => {
      const q = request.query.q?.trim() ?? '';
      // The same matching as /api/proofs/search?q=.
      const filter = q === '' ? {} : { q };
      const { proofs, nextCursor } = await ctx.proofs.list(filter, LIST_PAGE_SIZE, request.query.cursor);
      return sendHtml(
        reply,
        renderProofsList(ctx.config, {
          q,
          proofs,
          nextCursor,
          isFirstPage: request.query.cursor === undefined,
        }),
      );
    },
  );

  api.get('/agents', page('For agents and programs (HTML)'), async (_request, reply) =>
    sendHtml(reply, renderAgents(facts())),
  );

  api.get('/pricing', page('Pricing (HTML)'), async (_request, reply) =>
    sendHtml(reply, renderPricing(facts())),
  );

  api.get('/actions', page('Action templates (HTML)'), async (_request, reply) =>
    sendHtml(reply, renderActions(facts(), (await ctx.stats.newest(1))[0]?.id ?? null)),
  );

  api.get('/trust', page('Trust summary (HTML)'), async (_request, reply) => {
    const current = facts();
    return sendHtml(reply, renderTrust(current, buildTrust(current, await ctx.stats.totals())));
  });

  api.get('/marketplace', page('Marketplace listing (HTML)'), async (_request, reply) => {
    const current = facts();
    return sendHtml(reply, renderMarketplace(current, buildMarketplace(current)));
  });
}
