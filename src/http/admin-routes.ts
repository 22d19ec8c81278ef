import type { FastifyInstance, onRequestAsyncHookHandler, RouteOptions } from 'fastify';
import { secretsEqual } from '../core/secrets.ts';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * An administrator route: it needs X-Service-Admin-Key (and says so in the OpenAPI document), browsers on other origins get no CORS grant
     * for its path, and robots.txt asks crawlers to stay away from it.
     */
    admin?: boolean;
  }
  interface FastifyInstance {
    /** The administrator routes registered so far, as `config: { admin: true }` marks them. */
    adminRoutes: AdminRoutes;
  }
}

/** What the administrator routes' marks add up to; read once every route is registered. */
export interface AdminRoutes {
  /**
   * The leading paths of the marked routes, up to their first parameter, none under another, in the
   * order the routes were registered: `/api/accounts`, `/api/api-keys`, …
   */
  readonly prefixes: readonly string[];
  /** Whether a request path falls under one of `prefixes`. */
  covers(path: string): boolean;
}

/** `/api/accounts/:id/api-keys` → `/api/accounts`: the path's segments before its first parameter. */
function leadingPath(url: string): string {
  const segments = url.split('/');
  const firstParameter = segments.findIndex((segment) => /[:*]/.test(segment));
  return firstParameter === -1 ? url : segments.slice(0, firstParameter).join('/');
}

const isUnder = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * Collects the routes marked `config: { admin: true }` as they are registered, into `app.adminRoutes`,
 * and puts the administrator guard on each. Call it before any route plugin is registered.
 */
export function collectAdminRoutes(app: FastifyInstance, adminKey: string | undefined): AdminRoutes {
  const guard = adminGuard(adminKey);
  const prefixes: string[] = [];
  const adminRoutes: AdminRoutes = {
    prefixes,
    covers: (path) => prefixes.some((prefix) => path.startsWith(prefix)),
  };
  app.decorate('adminRoutes', adminRoutes);
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.admin !== true) return;
    // The guard runs on the marked routes only, after the hooks every request goes through (rate
    // limit, API key): no other request pays for it.
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [...own, guard];
    // The OpenAPI document names the key each administrator operation needs (http/openapi.ts).
    if (route.schema !== undefined) route.schema = { ...route.schema, security: [{ adminKey: [] }] };
    const prefix = leadingPath(route.url);
    if (prefixes.some((known) => isUnder(prefix, known))) return;
    const notCovered = prefixes.filter((known) => !isUnder(known, prefix));
    prefixes.splice(0, prefixes.length, ...notCovered, prefix);
  });
  return adminRoutes;
}

/**
 * The administrator guard, on every route marked admin: X-Service-Admin-Key must equal
 * SERVICE_ADMIN_KEY, compared in constant time. With no admin key configured, every administrator
 * call is refused, saying so.
 */
function adminGuard(adminKey: string | undefined): onRequestAsyncHookHandler {
  return async (request) => {
    if (adminKey === undefined) {
      throw new AppError(
        'unauthorized',
        'This service has no admin key configured, so it refuses every administrator call: set ' +
          'SERVICE_ADMIN_KEY (at least 16 characters; docs/deploy.md) and restart it',
        { setting: 'SERVICE_ADMIN_KEY' },
      );
    }
    const given = request.headers['x-service-admin-key'];
    if (typeof given !== 'string' || !secretsEqual(given, adminKey)) {
      throw new AppError('unauthorized', 'This endpoint needs a valid X-Service-Admin-Key header');
    }
  };
}
