import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseTileIndexPath } from '../core/merkle-tree.ts';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import { ProofIdParams } from '../proofs/proof-schemas.ts';
import { proofNotFound } from '../proofs/proofs-service.ts';
import { encodeInclusion, TILE_WIDTH } from './log-service.ts';

const IMMUTABLE = 'public, max-age=31536000, immutable';
const FRESH = 'public, max-age=1';
const TreeSize = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Base64Hash = Type.String({ description: 'A SHA-256 hash, base64.' });

const InclusionQuery = Type.Object(
  { treeSize: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })) },
  { additionalProperties: false },
);
const ConsistencyQuery = Type.Object(
  {
    from: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    to: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
const InclusionProof = Type.Object({
  leafIndex: TreeSize,
  treeSize: TreeSize,
  rootHash: Base64Hash,
  hashes: Type.Array(Base64Hash, { description: 'RFC 6962 audit path, from the leaf sibling up.' }),
  checkpoint: Type.Union([Type.String(), Type.Null()], {
    description: 'The signed C2SP checkpoint of that tree size (null for a size the log never signed).',
  }),
});
const ConsistencyProof = Type.Object({ from: TreeSize, to: TreeSize, hashes: Type.Array(Base64Hash) });
const TileParams = Type.Object({ '*': Type.String({ maxLength: 64 }) });

const notFound = (what: string) => new AppError('not_found', `No ${what}`, {});

/** DECISIONS.md §8: the transparency log's C2SP read path and its proofs. */
export async function logRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const text = 'text/plain; charset=utf-8';

  const leafIndexOf = async (id: string): Promise<number> => {
    const proof = await ctx.proofs.get(id);
    if (proof === undefined) throw proofNotFound(id);
    if (proof.log === null) {
      throw new AppError(
        'not_yet_integrated',
        'The proof is not in the log yet; it is integrated within about a second. Retry shortly.',
        { id },
        { 'Retry-After': '1' },
      );
    }
    return proof.log.leafIndex;
  };

  api.get(
    '/log/checkpoint',
    {
      schema: {
        summary: 'The latest signed checkpoint of the log (C2SP tlog-checkpoint, a signed note)',
        tags: ['log'],
        response: {
          200: { description: 'The signed note', content: { 'text/plain': { schema: { type: 'string' } } } },
          ...errorResponses(404, 429),
        },
      },
    },
    async (_request, reply) => {
      const latest = await ctx.log.latest();
      if (latest === undefined) throw notFound('checkpoint yet: the log starts within a second');
      return reply.header('Content-Type', text).header('Cache-Control', FRESH).send(latest.checkpoint);
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
    '/api/proofs/:id/inclusion',
    {
      schema: {
        summary:
          'Inclusion proof of a proof in the log, against a tree size (the latest checkpoint by default)',
        tags: ['log'],
        params: ProofIdParams,
        querystring: InclusionQuery,
        response: {
          200: { description: 'The inclusion proof', ...InclusionProof },
          ...errorResponses(400, 404, 409, 429),
        },
      },
    },
    async (request) => {
      const leafIndex = await leafIndexOf(request.params.id);
      return encodeInclusion(await ctx.log.inclusion(leafIndex, request.query.treeSize));
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

  api.get(
    '/api/proofs/:id/tlog-proof',
    {
      schema: {
        summary: 'The self-contained offline proof of inclusion (C2SP tlog-proof)',
        tags: ['log'],
        params: ProofIdParams,
        response: {
          200: { description: 'The tlog-proof file', type: 'string' },
          ...errorResponses(404, 409, 429),
        },
      },
    },
    async (request, reply) => {
      const proof = await ctx.log.tlogProof(await leafIndexOf(request.params.id));
      return reply
        .header('Content-Type', text)
        .header('Content-Disposition', `attachment; filename="${request.params.id}.tlog-proof"`)
        .header('Cache-Control', 'no-cache')
        .send(proof);
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
