import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import type { AppContext } from './context.ts';
import { healthRoutes } from './health/health-routes.ts';
import { ADMIN_PREFIXES } from './http/admin-paths.ts';
import { frameworkErrorHandler, registerErrorHandling } from './http/error-handler.ts';
import { registerOpenApi } from './http/openapi.ts';
import { registerRateLimit } from './http/rate-limit.ts';
import { createValidatorCompiler } from './http/validation.ts';
import { assetRoutes } from './pages/assets.ts';
import { crawlerFileRoutes } from './pages/crawler-files.ts';
import { dashboardRoutes } from './pages/dashboard-routes.ts';
import { documentRoutes } from './pages/document-routes.ts';
import { proofPageRoutes } from './pages/proof-routes.ts';
import { sitePageRoutes } from './pages/site-routes.ts';
import { proofsRoutes } from './proofs/proofs-routes.ts';
import { SERVICE_VERSION } from './version.ts';

export const BODY_LIMIT_BYTES = 128 * 1024;

/** Headers that carry secrets: never written to a log line. */
export const REDACTED_HEADERS = [
  'x-service-admin-key',
  'x-service-key',
  'authorization',
  'cookie',
  'payment-signature',
];

export interface BuildAppOptions {
  /** Where log lines go (one JSON object per line); standard output when absent. */
  logStream?: { write(line: string): void };
  /** Called for every route as it is registered (tests check that /openapi.json covers them all). */
  onRoute?: (route: RouteOptions) => void;
}

/** Builds the HTTP application: platform plugins first, then every route plugin, in one visible list. */
export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = ctx;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_HEADERS.map((h) => `req.headers["${h}"]`), censor: '[redacted]' },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: config.trustProxy ?? false,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    requestTimeout: 30_000,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors: frameworkErrorHandler,
    ajv: { customOptions: { strict: false } },
  });
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  app.setValidatorCompiler(createValidatorCompiler());
  // Only JSON bodies are accepted; without this Fastify would parse text/plain and answer 400, not 415.
  app.removeContentTypeParser('text/plain');
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('X-Request-Id', request.id);
  });
  registerErrorHandling(app);
  // While stopping, answers in flight close their connection, so keep-alive sockets do not hold the
  // process open until their idle timeout.
  let isClosing = false;
  app.addHook('preClose', async () => {
    isClosing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (isClosing) void reply.header('Connection', 'close');
  });

  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'"],
        connectSrc: ["'self'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        objectSrc: ["'none'"],
        ...(config.publicBaseUrl.startsWith('https:') ? { upgradeInsecureRequests: [] } : {}),
      },
    },
  });
  await app.register(cors, {
    delegator: (request, callback) => {
      const path = request.url ?? '/';
      const isAdmin = ADMIN_PREFIXES.some((prefix) => path.startsWith(prefix));
      callback(null, {
        origin: isAdmin ? false : '*',
        methods: ['GET', 'HEAD', 'POST'],
        allowedHeaders: ['Content-Type', 'X-Service-Key', 'PAYMENT-SIGNATURE'],
        exposedHeaders: [
          'PAYMENT-REQUIRED',
          'PAYMENT-RESPONSE',
          'Idempotent-Replayed',
          'RateLimit',
          'RateLimit-Policy',
          'Retry-After',
          'X-Request-Id',
        ],
        maxAge: 600,
      });
    },
  });
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl, version: SERVICE_VERSION });
  if (config.rateLimit.max > 0) {
    await registerRateLimit(app, { max: config.rateLimit.max, windowMs: config.rateLimit.windowMs });
  }

  const routes = [
    healthRoutes,
    proofsRoutes,
    assetRoutes,
    proofPageRoutes,
    sitePageRoutes,
    dashboardRoutes,
    documentRoutes,
    crawlerFileRoutes,
  ];
  for (const plugin of routes) await app.register(async (scope) => plugin(scope, ctx));
  return app;
}
