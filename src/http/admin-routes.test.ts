import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify';
import { buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { createContext, type AppContext } from '../context.ts';
import { ADMIN_KEY, makeDataDir } from '../../test/helper.ts';
import type { AdminRoutes } from './admin-routes.ts';

/** The real application, with every route it registered. */
interface Built {
  app: FastifyInstance;
  ctx: AppContext;
  routes: RouteOptions[];
  dataDir: string;
}

async function build(env: Record<string, string>): Promise<Built> {
  const dataDir = makeDataDir();
  const ctx = await createContext(
    loadConfig({ DATABASE_URL: `sqlite:${path.join(dataDir, 'hashproof.db')}`, LOG_LEVEL: 'silent', ...env }),
  );
  const routes: RouteOptions[] = [];
  const app = await buildApp(ctx, { onRoute: (route) => void routes.push(route) });
  await app.ready();
  return { app, ctx, routes, dataDir };
}

async function close({ app, ctx, dataDir }: Built): Promise<void> {
  await app.close();
  await ctx.close();
  rmSync(dataDir, { recursive: true, force: true });
}

/** Each method of each route as `METHOD /url`. */
const operations = (routes: RouteOptions[]) =>
  routes.flatMap((route) =>
    (Array.isArray(route.method) ? route.method : [route.method]).map((method) => `${method} ${route.url}`),
  );

const marked = (routes: RouteOptions[]) => routes.filter((route) => route.config?.admin === true);

/** The routes under an administrator path that are not marked as administrator routes. */
const unmarkedUnderAdminPaths = (routes: RouteOptions[], adminRoutes: AdminRoutes) =>
  operations(routes.filter((route) => adminRoutes.covers(route.url) && route.config?.admin !== true));

/** A URL the route answers: each parameter filled in. */
const concrete = (url: string) => url.replace(/:[A-Za-z0-9_]+/g, 'x1').replace(/\*$/, 'x1');

const KNOWN_ADMIN_OPERATIONS = [
  'GET /api/accounts',
  'POST /api/accounts',
  'GET /api/accounts/:id/api-keys',
  'POST /api/accounts/:id/api-keys',
  'POST /api/api-keys/:id/revoke',
  'GET /api/accounts/:id/webhooks',
  'POST /api/accounts/:id/webhooks',
  'POST /api/webhooks/:id/test',
  'GET /metrics',
];

let withKey: Built;
let withoutKey: Built;
before(async () => {
  withKey = await build({ SERVICE_ADMIN_KEY: ADMIN_KEY });
  withoutKey = await build({});
});
after(async () => {
  await close(withKey);
  await close(withoutKey);
});

describe('administrator routes, marked once', () => {
  test('the marked routes are the known administrator operations, and their paths are the admin paths', () => {
    const adminOperations = operations(marked(withKey.routes));
    for (const known of KNOWN_ADMIN_OPERATIONS) assert.ok(adminOperations.includes(known), known);
    assert.deepEqual(withKey.app.adminRoutes.prefixes, [
      '/api/accounts',
      '/api/api-keys',
      '/api/webhooks',
      '/metrics',
    ]);
  });

  test('every route under an administrator path is marked as one', () => {
    const { routes, app } = withKey;
    assert.ok(routes.length > 40, `${routes.length} routes registered`);
    assert.deepEqual(unmarkedUnderAdminPaths(routes, app.adminRoutes), []);
    // The check finds a route someone forgot to mark, public or not.
    const forgotten = [
      { method: 'GET', url: '/api/accounts/:id/usage', config: {} },
      { method: 'GET', url: '/metrics/summary' },
    ] as RouteOptions[];
    assert.deepEqual(unmarkedUnderAdminPaths([...routes, ...forgotten], app.adminRoutes), [
      'GET /api/accounts/:id/usage',
      'GET /metrics/summary',
    ]);
  });

  test('every marked route refuses a request without the admin key, or with a wrong one', async () => {
    const adminRoutes = marked(withKey.routes);
    let checked = 0;
    for (const route of adminRoutes) {
      for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
        const what = `${method} ${route.url}`;
        const url = concrete(route.url);
        for (const headers of [{}, { 'x-service-admin-key': `${ADMIN_KEY}x` }]) {
          const res = await withKey.app.inject({ method, url, headers });
          assert.equal(res.statusCode, 401, what);
          if (method === 'HEAD') continue;
          assert.deepEqual(res.json().error, {
            code: 'unauthorized',
            message: 'This endpoint needs a valid X-Service-Admin-Key header',
            details: {},
          });
        }
        // The right key passes the guard: whatever the route answers then, it is not a 401.
        const res = await withKey.app.inject({ method, url, headers: { 'x-service-admin-key': ADMIN_KEY } });
        assert.notEqual(res.statusCode, 401, `${what}: ${res.body}`);
        checked += 1;
      }
    }
    assert.ok(checked >= KNOWN_ADMIN_OPERATIONS.length, `${checked} administrator operations`);
  });

  test('the OpenAPI document names the admin key for exactly the marked operations', async () => {
    const document = (await withKey.app.inject({ url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, { security?: unknown }>>;
    }>();
    const adminOperations = operations(marked(withKey.routes)).filter((what) => !what.startsWith('HEAD '));
    const needingKey: string[] = [];
    for (const [url, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const names = JSON.stringify(operation.security ?? []);
        if (names.includes('adminKey'))
          needingKey.push(`${method.toUpperCase()} ${url.replace(/{(\w+)}/g, ':$1')}`);
      }
    }
    assert.deepEqual(needingKey.sort(), adminOperations.sort());
  });

  test('a public route is not guarded', async () => {
    const res = await withKey.app.inject({ method: 'GET', url: '/api/proofs/recent' });
    assert.equal(res.statusCode, 200);
  });
});

describe('a service without SERVICE_ADMIN_KEY', () => {
  test('refuses every administrator call with 401, saying no admin key is configured and how to set one', async () => {
    for (const route of marked(withoutKey.routes)) {
      for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
        if (method === 'HEAD') continue;
        for (const headers of [{}, { 'x-service-admin-key': ADMIN_KEY }] as Record<string, string>[]) {
          const res: LightMyRequestResponse = await withoutKey.app.inject({
            method,
            url: concrete(route.url),
            headers,
          });
          assert.equal(res.statusCode, 401, `${method} ${route.url}`);
          const { error } = res.json();
          assert.equal(error.code, 'unauthorized');
          assert.match(error.message, /^This service has no admin key configured/);
          assert.match(error.message, /set SERVICE_ADMIN_KEY .*docs\/deploy\.md/);
          assert.deepEqual(error.details, { setting: 'SERVICE_ADMIN_KEY' });
        }
      }
    }
  });
});
