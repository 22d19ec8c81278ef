import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import Fastify, { LogController, type FastifyInstance, type RouteOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { Account, ApiKey } from './accounts/accounts-schemas.ts';
import { AppError } from './errors.ts';
import { accountsRoutes } from './accounts/accounts-routes.ts';
import type { AppContext } from './context.ts';
import { healthRoutes } from './health/health-routes.ts';
import { collectAdminRoutes } from './http/admin-routes.ts';
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from './http/error-handler.ts';
import { apiKeyHooks } from './http/auth.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerRateLimit } from './http/rate-limit.ts';
import { computeSecurityHeaders, contentSecurityPolicy } from './http/security-headers.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { assetRoutes } from './pages/assets.ts';
import { crawlerFileRoutes } from './pages/crawler-files.ts';
import { dashboardRoutes } from './pages/dashboard-routes.ts';
import { documentRoutes } from './pages/document-routes.ts';
import { proofPageRoutes } from './pages/proof-routes.ts';
import { sitePageRoutes } from './pages/site-routes.ts';
import { Proof } from './proofs/proof-schemas.ts';
import { proofsRoutes } from './proofs/proofs-routes.ts';
import { batchRoutes } from './proofs/batch-routes.ts';
import { mcpRoutes } from './proofs/mcp-routes.ts';
import { evidenceRoutes } from './proofs/evidence-routes.ts';
import { keysRoutes } from './keys/keys-routes.ts';
import { loggerOptions } from './platform/log-options.ts';
import { standardOutput } from './platform/log-output.ts';
import { SERVICE_VERSION } from './version.ts';
import { Delivery, Webhook } from './webhooks/webhooks-schemas.ts';
import { webhooksRoutes } from './webhooks/webhooks-routes.ts';
import { discoveryRoutes } from './payments/discovery.ts';
import { logRoutes } from './log/log-routes.ts';
import { tsaRoutes } from './tsa/tsa-routes.ts';
import { anchorsRoutes } from './anchors/anchors-routes.ts';
import { metricsRoutes } from './metrics/metrics-routes.ts';

const BODY_LIMIT_BYTES = 128 * 1024;

interface BuildAppOptions {
  /** Where log lines go (one JSON object per line); standard output when absent. */
  logStream?: { write(line: string): void };
  /** Called for every route as it is registered (tests check that /openapi.json covers them all). */
  onRoute?: (route: RouteOptions) => void;
}

/** Builds the HTTP application: platform plugins first, then every route plugin, in one visible list. */
export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = ctx;
  const securityHeaders = computeSecurityHeaders({
    contentSecurityPolicy: contentSecurityPolicy(config.publicBaseUrl.startsWith('https:')),
    frameguard: { action: 'deny' },
  });
  let isClosing = false;
  const app = Fastify({
    logger: {
      ...loggerOptions(config.logLevel),
      stream: options.logStream ?? standardOutput(),
    },
    bodyLimit: BODY_LIMIT_BYTES,
    // One access-log line per request, written when the response is sent (below), instead of two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: config.trustProxy ?? false,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    // Node's server enforces the timeout only when it gets it at construction (Fastify's requestTimeout
    // is set afterwards), and looks for late requests every 30 s by default: four times per timeout here.
    requestTimeout: config.requestTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.ceil(Math.min(config.requestTimeoutMs, 30_000) / 4),
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    return503OnClosing: false, // answered by the hook below, in the envelope
    frameworkErrors: frameworkErrorHandler(securityHeaders),
    clientErrorHandler: clientErrorHandler(securityHeaders),
    ajv: { customOptions: { strict: false } },
    // The validators that pick a union's branch when an answer is serialized are compiled at start-up,
    // not on the first answer that reaches them: a burst of first requests to each route right after a
    // start otherwise held the event loop for about 160 ms compiling them (docs/security.md).
    serializerOpts: { compileValidators: true },
  });
  // Node answers an Expect other than 100-continue with a bare 417 of its own; RFC 9110 §10.1.1 lets a
  // server ignore it instead, so such a request is served like any other (errors in the envelope).
  app.server.on('checkExpectation', (req, res) => app.routing(req, res));
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  // Routes marked `config: { admin: true }`, collected as they are registered: each gets the guard, their
  // paths get no CORS grant and are kept from crawlers (robots.txt).
  const adminRoutes = collectAdminRoutes(app, config.adminKey);
  app.setValidatorCompiler(createValidatorCompiler());
  // Only JSON bodies are accepted; without this Fastify would parse text/plain and answer 400, not 415.
  app.removeContentTypeParser('text/plain');
  app.addHook('onRequest', async (request, reply) => {
    void reply.headers(securityHeaders);
    void reply.header('X-Request-Id', request.id);
    // A request that arrives on an open connection while the server drains: 503 in the envelope (Fastify's
    // own 503 has neither the envelope nor Retry-After), so the client retries on another instance. /health
    // answers so too: its reason tells a load balancer to send nothing more (docs/deploy.md, "Readiness").
    if (isClosing) {
      throw new AppError(
        'service_unavailable',
        'The service is shutting down; retry shortly',
        { reason: 'shutting_down' },
        { 'Retry-After': '1' },
      );
    }
  });
  app.addHook('onResponse', async (request, reply) => {
    ctx.metrics.observe({
      method: request.method,
      route: request.routeOptions.url,
      status: reply.statusCode,
      seconds: reply.elapsedTime / 1000,
      replayed: reply.getHeader('idempotent-replayed') === 'true',
      paymentSent: request.headers['payment-signature'] !== undefined,
      paymentSettled: reply.getHeader('payment-response') !== undefined,
    });
    request.log.info(
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request',
    );
  });
  registerErrorHandling(app);
  // While stopping, answers in flight close their connection, so keep-alive sockets do not hold the
  // process open until their idle timeout.
  app.addHook('preClose', async () => {
    isClosing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (isClosing) void reply.header('Connection', 'close');
  });

  // CORS for every public operation and none of the administrator's (a preflight is answered by a route
  // of its own, so the path decides too); the two option sets are built once.
  const publicCors = {
    origin: '*',
    // DELETE: a browser agent ends its MCP session (DELETE /mcp); the Mcp-* headers carry the session.
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    allowedHeaders: [
      'Content-Type',
      'X-Service-Key',
      'PAYMENT-SIGNATURE',
      'Mcp-Session-Id',
      'Mcp-Protocol-Version',
      'Last-Event-ID',
    ],
    exposedHeaders: [
      'Mcp-Session-Id',
      'PAYMENT-REQUIRED',
      'PAYMENT-RESPONSE',
      'Idempotent-Replayed',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'X-Request-Id',
    ],
    maxAge: 600,
  };
  const adminCors = { ...publicCors, origin: false };
  await app.register(cors, {
    delegator: (request, callback) => {
      const isAdmin = request.routeOptions.config.admin === true || adminRoutes.covers(request.url);
      callback(null, isAdmin ? adminCors : publicCors);
    },
  });
  await registerOpenApi(app, {
    publicBaseUrl: config.publicBaseUrl,
    version: SERVICE_VERSION,
    isPaid: config.paymentMode === 'x402',
    sharedSchemas: [Proof, Account, ApiKey, Webhook, Delivery],
  });
  const apiKeys = apiKeyHooks(ctx.accounts);
  app.addHook('onRequest', apiKeys.identify);
  if (config.rateLimit.max > 0) {
    let redis: Redis | undefined;
    if (config.redisUrl !== undefined) {
      // Loaded only when configured: the embedded setup starts without it.
      const { Redis } = await import('ioredis');
      const client = new Redis(config.redisUrl, {
        connectTimeout: 1000,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
      });
      client.on('error', (error) =>
        app.log.warn({ err: error }, 'redis error; rate limits are not enforced meanwhile'),
      );
      app.addHook('onClose', async () => {
        await client.quit().catch(() => client.disconnect());
      });
      redis = client;
    }
    await registerRateLimit(app, {
      max: config.rateLimit.max,
      windowMs: config.rateLimit.windowMs,
      ...(redis ? { redis } : {}),
      nameSpace: `${config.redisKeyPrefix}rate-limit:`,
    });
  }
  app.addHook('onRequest', apiKeys.refuse);

  const routes = [
    healthRoutes,
    proofsRoutes,
    batchRoutes,
    mcpRoutes,
    evidenceRoutes,
    keysRoutes,
    accountsRoutes,
    webhooksRoutes,
    assetRoutes,
    proofPageRoutes,
    sitePageRoutes,
    dashboardRoutes,
    documentRoutes,
    crawlerFileRoutes,
    discoveryRoutes,
    logRoutes,
    tsaRoutes,
    anchorsRoutes,
    metricsRoutes,
  ];
  for (const plugin of routes) await app.register(async (scope) => plugin(scope, ctx));
  return app;
}
