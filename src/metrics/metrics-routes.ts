import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import type { ServiceMetrics } from './metrics.ts';

/**
 * GET /metrics on the main port, for administrators (X-Service-Admin-Key); not rate limited. With
 * METRICS_PORT, the metrics are also served without a key on that port, from the app's start to its close.
 */
export async function metricsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const { metricsPort, host } = ctx.config;
  if (metricsPort !== undefined) {
    let server: Server | undefined;
    app.addHook('onReady', async () => {
      server = await startMetricsServer(ctx.metrics, host, metricsPort);
    });
    app.addHook('onClose', async () => {
      server?.closeAllConnections();
      await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    });
  }
  app.get(
    '/metrics',
    {
      config: { rateLimit: false, admin: true },
      schema: {
        summary: 'Prometheus metrics of this instance (administrators; or on METRICS_PORT without a key)',
        tags: ['service'],
        response: {
          200: {
            description: 'The Prometheus text exposition format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses(401),
        },
      },
    },
    async (_request, reply) =>
      reply.header('Content-Type', ctx.metrics.contentType).send(await ctx.metrics.text()),
  );
}

/**
 * The metrics alone on a port of their own (METRICS_PORT), without a key: for a Prometheus on a
 * private network. Anything but GET /metrics is 404.
 */
async function startMetricsServer(metrics: ServiceMetrics, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
