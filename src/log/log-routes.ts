import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseTileIndexPath } from '../core/merkle-tree.ts';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import { ConsistencyProof, ConsistencyQuery, CosignedQuery } from './log-schemas.ts';
import { TILE_WIDTH } from '../core/tlog-tiles.ts';

const IMMUTABLE = 'public, max-age=31536000, immutable';
const FRESH = 'public, max-age=1';
const TileParams = Type.Object({ '*': Type.String({ maxLength: 64 }) });

const notFound = (what: string) => new AppError('not_found', `No ${what}`, {});

/**
 * The transparency log's read path (C2SP tlog-tiles, docs/verification.md, "The transparency log"):
 * the latest checkpoint, tiles and entry bundles, consistency between tree sizes. The evidence of one
 * proof (its inclusion proof, its tlog-proof file) is served with the proofs (proofs/evidence-routes.ts).
 */
export async function logRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const text = 'text/plain; charset=utf-8';

  api.get(
    '/log/checkpoint',
    {
      schema: {
        summary:
          "The latest signed checkpoint of the log (C2SP tlog-checkpoint, a signed note), with the witnesses' cosignatures it has",
        tags: ['log'],
        response: {
          200: { description: 'The signed note', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses(404, 429),
        },
      },
    },
    async (_request, reply) => {
      const latest = await ctx.log.served();
      if (latest === undefined) throw notFound('checkpoint yet: the log starts within a second');
      return reply.header('Content-Type', text).header('Cache-Control', FRESH).send(latest);
    },
  );

  api.get(
    '/api/log/cosigned-checkpoint',
    {
      schema: {
        summary:
          "The largest checkpoint of the log that carries witnesses' cosignatures (C2SP tlog-cosignature lines after the log's signature)",
        tags: ['log'],
        querystring: CosignedQuery,
        response: {
          200: { description: 'The signed note', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses(404, 429),
        },
      },
    },
    async (request, reply) => {
      const quorum = request.query.witnesses ?? 1;
      const note = await ctx.log.newestCosigned(quorum);
      if (note === undefined)
        throw notFound(`checkpoint cosigned by ${quorum} of the configured witnesses yet`);
      return reply.header('Content-Type', text).header('Cache-Control', FRESH).send(note);
    },
  );

  api.get(
    '/log/tile/*',
    {
      schema: {
        summary:
          'C2SP tlog-tiles: hash tiles `/log/tile/{L}/{N}[.p/{W}]`, entry bundles `/log/tile/entries/{N}[.p/{W}]`',
        tags: ['log'],
        params: TileParams,
        response: {
          200: { description: 'The tile bytes (application/octet-stream)' },
          ...errorResponses(404, 429),
        },
      },
    },
    async (request, reply) => {
      const tile = parseTilePath(request.params['*']);
      if (tile === undefined) throw notFound('such tile (not a C2SP tile path)');
      const width = tile.width ?? TILE_WIDTH;
      const bytes =
        tile.level === 'entries'
          ? await ctx.log.entries(tile.index, width)
          : await ctx.log.tile(tile.level, tile.index, width);
      if (bytes === undefined) throw notFound('such tile yet');
      return reply
        .header('Content-Type', 'application/octet-stream')
        .header('Cache-Control', tile.width === undefined ? IMMUTABLE : FRESH)
        .send(bytes);
    },
  );

  api.get(
    '/api/log/consistency',
    {
      schema: {
        summary: 'Consistency proof between two tree sizes of the log',
        tags: ['log'],
        querystring: ConsistencyQuery,
        response: {
          200: { description: 'The consistency proof', ...ConsistencyProof },
          ...errorResponses(400, 429),
        },
      },
    },
    async (request) => {
      const { from, to } = request.query;
      const hashes = await ctx.log.consistency(from, to);
      return { from, to, hashes: hashes.map((hash) => Buffer.from(hash).toString('base64')) };
    },
  );
}

/** `0/x001/234`, `1/000.p/5`, `entries/042.p/17` → level, index, and width for a partial tile. */
export function parseTilePath(
  path: string,
): { level: number | 'entries'; index: number; width: number | undefined } | undefined {
  const segments = path.split('/');
  const [first, ...rest] = segments;
  let level: number | 'entries';
  if (first === 'entries') level = 'entries';
  else if (first !== undefined && /^(0|[1-9]\d?)$/.test(first) && Number(first) <= 6) level = Number(first);
  else return undefined;
  let width: number | undefined;
  let indexSegments = rest;
  const last = rest.at(-1);
  const beforeLast = rest.at(-2);
  if (beforeLast?.endsWith('.p') && last !== undefined) {
    if (!/^[1-9]\d{0,2}$/.test(last) || Number(last) >= TILE_WIDTH) return undefined;
    width = Number(last);
    indexSegments = [...rest.slice(0, -2), beforeLast.slice(0, -2)];
  }
  const index = parseTileIndexPath(indexSegments);
  return index === undefined ? undefined : { level, index, width };
}
