import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import { SERVICE_VERSION } from '../version.ts';

const Health = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  version: Type.String(),
  mode: Type.Union([Type.Literal('demo'), Type.Literal('x402')]),
  database: Type.Object({ engine: Type.String(), ok: Type.Boolean() }),
  log: Type.Object({ ok: Type.Boolean() }),
  uptimeSeconds: Type.Integer(),
  time: Type.String({ format: 'date-time' }),
});

/**
 * Why an instance should get no traffic, in `details.reason` of its 503 (docs/deploy.md, "Readiness"):
 * the database does not answer, or the transparency log stopped because its database is not the tree it
 * published. The third, `shutting_down`, is answered by the app's stopping hook (app.ts) before any route.
 */
type NotReady = 'database_unavailable' | 'log_stopped';

/**
 * GET /health: liveness and readiness in one; 503 when the database does not answer, or when the
 * transparency log stopped because its database is not the tree it published (docs/deploy.md,
 * "Restoring a backup"): then `log` says why and what to do. Not rate limited.
 */
export async function healthRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const startedAt = ctx.clock.now();
  app.get(
    '/health',
    {
      config: { rateLimit: false },
      schema: {
        summary: 'Runtime health and mode',
        tags: ['service'],
        response: { 200: { description: 'Healthy', ...Health }, ...errorResponses(503) },
      },
    },
    async () => {
      const now = ctx.clock.now();
      const summary = {
        service: 'hashproof',
        version: SERVICE_VERSION,
        mode: ctx.config.paymentMode,
        uptimeSeconds: Math.floor((now - startedAt) / 1000),
        time: new Date(now).toISOString(),
      };
      try {
        await ctx.database.ping();
      } catch {
        throw new AppError(
          'service_unavailable',
          'The database does not answer',
          {
            reason: 'database_unavailable' satisfies NotReady,
            ...summary,
            database: { engine: ctx.database.engine, ok: false },
          },
          { 'Retry-After': '5' },
        );
      }
      const database = { engine: ctx.database.engine, ok: true };
      const problem = ctx.log.problem;
      if (problem !== undefined) {
        throw new AppError(
          'service_unavailable',
          'The transparency log is stopped: new proofs are refused until the operator acts',
          {
            reason: 'log_stopped' satisfies NotReady,
            ...summary,
            database,
            log: { ok: false, reason: problem.reason, action: problem.action },
          },
          { 'Retry-After': '60' },
        );
      }
      return { ok: true, ...summary, database, log: { ok: true } };
    },
  );
}
