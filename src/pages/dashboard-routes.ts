import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { renderDashboard } from './dashboard-page.ts';
import { DashboardSummary } from './document-schemas.ts';
import { htmlResponses, sendHtml } from './layout.ts';
import { absoluteUrl } from './offering.ts';

/** The dashboard summary (JSON) and the dashboard page that shows it (docs/pages.md). */
export async function dashboardRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/api/dashboard/summary',
    {
      schema: {
        summary: 'Dashboard summary',
        description:
          'Proofs today (UTC), in the last 7 days and in total, by how they were paid for (`demo`, `x402`, ' +
          '`api_key`), per day for the last two weeks, and the newest proofs.',
        tags: ['service'],
        response: { 200: { description: 'The summary', ...DashboardSummary }, ...errorResponses(429) },
      },
    },
    async (_request, reply) => {
      const summary = await ctx.stats.summary();
      void reply.header('Cache-Control', 'no-cache');
      return {
        ok: true,
        mode: ctx.config.paymentMode,
        ...summary,
        recent: summary.recent.map(({ paidVia, ...proof }) => ({
          ...proof,
          createdVia: paidVia,
          url: absoluteUrl(ctx.config, `/proof/${proof.id}`),
        })),
      };
    },
  );

  app.get(
    '/dashboard',
    {
      schema: {
        summary: 'The dashboard (HTML)',
        tags: ['pages'],
        response: { ...htmlResponses('The dashboard page'), ...errorResponses(429) },
      },
    },
    async (_request, reply) => sendHtml(reply, renderDashboard(ctx.config, await ctx.stats.summary())),
  );
}
