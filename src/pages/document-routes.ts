import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { buildActionCatalog, buildCapabilities, buildQuickstart } from './agent-documents.ts';
import {
  ActionCatalog,
  Capabilities,
  Marketplace,
  Quickstart,
  Status,
  TrustSummary,
} from './document-schemas.ts';
import { gatherFacts } from './facts.ts';
import { buildMarketplace, buildStatus, buildTrust } from './service-documents.ts';

/** The machine-readable documents for agents and directories (docs/pages.md). All public, all JSON. */
export async function documentRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const startedAtMs = ctx.clock.now();
  const facts = () => gatherFacts(ctx, app.initialConfig.bodyLimit ?? 0);
  const doc = (summary: string, description: string, schema: object) => ({
    schema: {
      summary,
      description,
      tags: ['service'],
      response: { 200: { description: 'The document', ...schema }, ...errorResponses(429) },
    },
  });

  app.get(
    '/api/capabilities',
    doc(
      'Machine-readable capabilities',
      'What the service does, its payment terms, limits, credential schemes, every JSON operation, and ' +
        'the `mcpServers` configuration of its MCP servers (`mcp`).',
      Capabilities,
    ),
    async () => buildCapabilities(facts(), app.swagger()),
  );

  app.get(
    '/api/quickstart',
    doc(
      'Compact agent quickstart',
      'Six steps from hashing to citing a proof, with ready commands, and the `mcpServers` configuration ' +
        'an agent host needs (`mcp`).',
      Quickstart,
    ),
    async () => buildQuickstart(facts()),
  );

  app.get(
    '/api/actions',
    doc(
      'Action catalog (action templates)',
      'Templates a tool-using agent fills in: a name, an input JSON Schema, a URI template and an example.',
      ActionCatalog,
    ),
    async () => buildActionCatalog(facts(), (await ctx.stats.newest(1))[0]?.id ?? null),
  );

  app.get(
    '/api/trust',
    doc(
      'Public trust summary',
      'What a proof proves and does not, how it is signed, what the service stores, and the security contact.',
      TrustSummary,
    ),
    async () => buildTrust(facts(), await ctx.stats.totals()),
  );

  app.get(
    '/api/status',
    doc(
      'Public launch and runtime status',
      'Launch stage (demo or live), uptime and each component. Answers 200 with `status: "degraded"` when ' +
        'the database does not answer (`/health` answers 503 then).',
      Status,
    ),
    async () => {
      let isDatabaseUp = true;
      let totals = null;
      let anchors = null;
      let witnesses = null;
      try {
        await ctx.database.ping();
        [totals, anchors, witnesses] = await Promise.all([
          ctx.stats.totals(),
          ctx.anchors.status(),
          ctx.witnessing.status(),
        ]);
      } catch (error) {
        isDatabaseUp = false;
        app.log.warn({ err: error }, 'status: the database does not answer');
      }
      return buildStatus(facts(), { startedAtMs, isDatabaseUp, totals, anchors, witnesses });
    },
  );

  app.get(
    '/marketplace.json',
    doc(
      'Marketplace listing',
      "The service's offerings: the paid proof action with its price and terms, and the free reads.",
      Marketplace,
    ),
    async () => buildMarketplace(facts()),
  );
}
