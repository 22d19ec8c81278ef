import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

interface Asset {
  /** The path it is served at, with a content hash in the query so a new version is never read stale. */
  href: string;
  path: string;
  contentType: string;
  body: Buffer;
  etag: string;
}

function load(name: string, contentType: string): Asset {
  const body = readFileSync(new URL(`./assets/${name}`, import.meta.url));
  const digest = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const path = `/assets/${name}`;
  return { href: `${path}?v=${digest}`, path, contentType, body, etag: `"${digest}"` };
}

/** The one stylesheet and the one script of the pages: files, so the CSP can forbid inline code. */
export const STYLESHEET = load('site.css', 'text/css; charset=utf-8');
export const SCRIPT = load('site.js', 'text/javascript; charset=utf-8');

/**
 * Serves the static assets. Not rate limited (docs/api.md, "Rate limit"); cached for a day, revalidated
 * by ETag.
 */
export async function assetRoutes(app: FastifyInstance): Promise<void> {
  for (const asset of [STYLESHEET, SCRIPT]) {
    app.get(
      asset.path,
      {
        config: { rateLimit: false },
        schema: {
          summary: `Static asset ${asset.path}`,
          tags: ['pages'],
          response: {
            200: {
              description: 'The file',
              content: { [asset.contentType.split(';')[0] ?? '']: { schema: { type: 'string' } } },
            },
            304: { description: 'Not modified (the ETag matched)', type: 'null' },
          },
        },
      },
      async (request, reply) => {
        void reply.header('ETag', asset.etag).header('Cache-Control', 'public, max-age=86400');
        if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
        return reply.type(asset.contentType).send(asset.body);
      },
    );
  }
}
