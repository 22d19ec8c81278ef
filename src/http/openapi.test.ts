import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { validate } from '@readme/openapi-parser';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { buildApp } from '../app.ts';
import { loadConfig } from '../config.ts';
import { createContext, type AppContext } from '../context.ts';
import { makeDataDir } from '../../test/helper.ts';

let app: FastifyInstance;
let ctx: AppContext;
let dataDir: string;
const routes: RouteOptions[] = [];
let document: any;

before(async () => {
  dataDir = makeDataDir();
  ctx = await createContext(
    loadConfig({
      DATABASE_URL: `sqlite:${path.join(dataDir, 'hashproof.db')}`,
      PUBLIC_BASE_URL: 'https://proofs.example.com',
      LOG_LEVEL: 'silent',
    }),
  );
  app = await buildApp(ctx, { onRoute: (route) => void routes.push(route) });
  await app.ready();
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  assert.equal(res.statusCode, 200);
  document = res.json();
});
after(async () => {
  await app.close();
  await ctx.close();
  (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
});

test('/openapi.json is a valid OpenAPI 3.1 document (two independent validators)', async () => {
  assert.equal(document.openapi, '3.1.0');
  assert.equal(document.info.version, '0.2.1');
  assert.deepEqual(document.servers, [{ url: 'https://proofs.example.com' }]);
  const schemaCheck = await new Validator().validate(structuredClone(document));
  assert.equal(schemaCheck.valid, true, JSON.stringify(schemaCheck.errors, null, 2));
  const parserCheck = await validate(structuredClone(document));
  assert.equal(parserCheck.valid, true, JSON.stringify(parserCheck, null, 2));
});

test('every route registered in the app appears in /openapi.json', () => {
  const missing: string[] = [];
  let checked = 0;
  for (const route of routes) {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter(
      // HEAD routes are Fastify's automatic twins of GET routes; OPTIONS * is the CORS preflight.
      (method) => method !== 'HEAD' && !(method === 'OPTIONS' && route.url === '*'),
    );
    const openApiPath = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{*}');
    for (const method of methods) {
      checked += 1;
      if (document.paths?.[openApiPath]?.[method.toLowerCase()] === undefined) {
        missing.push(`${method} ${route.url}`);
      }
    }
  }
  assert.ok(checked > 30, `only ${checked} routes seen`);
  assert.deepEqual(missing, []);
});

test('every operation has a summary and described responses with a media type', () => {
  for (const [pathName, item] of Object.entries<any>(document.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      const where = `${method.toUpperCase()} ${pathName}`;
      assert.ok(operation.summary, `${where} has no summary`);
      const ok = operation.responses?.['200'] ?? operation.responses?.['201'];
      assert.ok(ok, `${where} documents no 200 or 201`);
      assert.notEqual(ok.description, 'Default Response', `${where}: its success has no description`);
      assert.ok(Object.keys(ok.content ?? {}).length > 0, `${where}: its success has no media type`);
    }
  }
});

test('the public documents and pages are described with their media types', () => {
  const mediaTypes = (p: string) => Object.keys(document.paths[p].get.responses['200'].content);
  assert.deepEqual(mediaTypes('/api/capabilities'), ['application/json']);
  assert.deepEqual(mediaTypes('/api/dashboard/summary'), ['application/json']);
  assert.deepEqual(mediaTypes('/proof/{id}'), ['text/html']);
  assert.deepEqual(mediaTypes('/proof/{id}/badge.svg'), ['image/svg+xml']);
  assert.deepEqual(mediaTypes('/llms.txt'), ['text/plain']);
  assert.deepEqual(mediaTypes('/sitemap.xml'), ['application/xml']);
  assert.ok(document.paths['/proof/{id}'].get.responses['404'], 'the HTML 404 of a proof page is documented');
});
