/** The attack mix of the hostile-load benchmark: each public route's most expensive request. */
import { metadataHash } from '../../../src/core/hashing.ts';
import { tileIndexPath } from '../../../src/core/merkle-tree.ts';
import { TILE_WIDTH } from '../../../src/core/tlog-tiles.ts';
import { SEED_METADATA, seedHash } from '../seed.ts';
import { attackBodies, maximalNotarize } from './attack-bodies.ts';

export interface AttackContext {
  /** Ids of seeded proofs, spread evenly over all of them in seeding order (what `seed` returns). */
  ids: string[];
  /** How many proofs were seeded (seed numbers 0 … proofs − 1). */
  proofs: number;
  /** The log's size when the attack starts (the seeded proofs are its first entries, in seeding order). */
  treeSize: number;
}

export interface AttackRequest {
  method: 'GET' | 'POST';
  path: string;
  contentType?: string;
  body?: Buffer;
  headers?: Record<string, string>;
}

interface Attack {
  route: string;
  /** The request; `n` counts this entry's earlier requests, so each can read something not cached. */
  request: (ctx: AttackContext, n: number) => AttackRequest;
}

export const get = (path: string): AttackRequest => ({ method: 'GET', path });
const post = (path: string, contentType: string, body: Buffer): AttackRequest => ({
  method: 'POST',
  path,
  contentType,
  body,
});
const tsaQuery = (body: Buffer) => post('/api/tsa', 'application/timestamp-query', body);

/** A seeded proof from the second half of the sample, a different one each time (the client reads the first). */
function attackedId(ctx: AttackContext, n: number): string {
  const half = Math.max(1, Math.floor(ctx.ids.length / 2));
  return ctx.ids[ctx.ids.length - 1 - (n % half)] ?? '';
}

/**
 * A proof from the first quarter of the seeded ones and a tree size between half the log and the whole
 * log, never the same pair twice (the service keeps paths by leaf and size): an older tree's root is
 * recomputed from the stored nodes, and its checkpoint looked up.
 */
function inclusionPath(ctx: AttackContext, n: number): string {
  const quarter = Math.max(1, Math.floor(ctx.ids.length / 4));
  const id = ctx.ids[quarter - 1 - (n % quarter)] ?? '';
  const treeSize = ctx.treeSize - ((n * 7919) % Math.max(1, Math.floor(ctx.treeSize / 2)));
  return `/api/proofs/${id}/inclusion?treeSize=${treeSize}`;
}

/** The last full tile (the deepest index path the log serves), or the partial first one of a small log. */
const lastTile = (ctx: AttackContext) =>
  ctx.treeSize < TILE_WIDTH
    ? `000.p/${Math.max(1, ctx.treeSize)}`
    : tileIndexPath(Math.floor(ctx.treeSize / TILE_WIDTH) - 1);

const searchPage = 'limit=100';

/**
 * Each public route's most expensive request found by reading its code, in the order the attacker
 * rotates through them. Left out: routes that answer a constant document or static file (`/health`,
 * which is exempt, `/assets/…`, `/llms.txt`, `/robots.txt`, `/.well-known/*`, `/api/quickstart`,
 * `/api/discovery`, `/marketplace(.json)`, `/agents`, `/pricing`, `/demo`, `/api/tsa/certs.pem`,
 * `/log/checkpoint`), and the administrator's routes (refused without its key). Add a row to add a case.
 */
export const ATTACKS: Attack[] = [
  {
    // The trigram index cannot answer fewer than three characters: every label is scanned.
    route: 'GET /api/proofs/search?q= (2 characters, no match)',
    request: () => get(`/api/proofs/search?q=zq&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (1 character, no match)',
    request: () => get(`/api/proofs/search?q=${encodeURIComponent('ж')}&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (a word in a tenth of the labels)',
    request: () => get(`/api/proofs/search?q=build&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?q= (trigrams that exist, never together)',
    request: () => get(`/api/proofs/search?q=12341234&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?metadataHash&q= (every proof, 2 characters)',
    request: () => get(`/api/proofs/search?metadataHash=${metadataHash(SEED_METADATA)}&q=zq&${searchPage}`),
  },
  {
    route: 'GET /api/proofs/search?contentHash&accountId (disjoint)',
    request: (ctx, n) =>
      get(
        `/api/proofs/search?contentHash=${seedHash((n * 7919) % ctx.proofs)}&accountId=acct_x&${searchPage}`,
      ),
  },
  {
    route: 'GET /api/proofs/search?metadataHash&accountId (disjoint)',
    request: () =>
      get(`/api/proofs/search?metadataHash=${metadataHash(SEED_METADATA)}&accountId=acct_x&${searchPage}`),
  },
  { route: 'GET /proofs?q= (HTML, 2 characters)', request: () => get('/proofs?q=zq') },
  { route: 'GET /api/proofs/recent?limit=100', request: () => get('/api/proofs/recent?limit=100') },
  { route: 'GET /api/dashboard/summary', request: () => get('/api/dashboard/summary') },
  { route: 'GET /dashboard', request: () => get('/dashboard') },
  { route: 'GET /', request: () => get('/') },
  { route: 'GET /api/status', request: () => get('/api/status') },
  { route: 'GET /api/trust', request: () => get('/api/trust') },
  { route: 'GET /trust', request: () => get('/trust') },
  { route: 'GET /sitemap.xml', request: () => get('/sitemap.xml') },
  {
    route: 'GET /api/verify/proofs/{id}',
    request: (ctx, n) => get(`/api/verify/proofs/${attackedId(ctx, n)}`),
  },
  { route: 'GET /proof/{id}', request: (ctx, n) => get(`/proof/${attackedId(ctx, n + 7)}`) },
  {
    route: 'GET /api/proofs/{id}/tlog-proof',
    request: (ctx, n) => get(`/api/proofs/${attackedId(ctx, n + 13)}/tlog-proof`),
  },
  {
    route: 'GET /api/proofs/{id}/timestamp.tsr',
    request: (ctx, n) => get(`/api/proofs/${attackedId(ctx, n + 19)}/timestamp.tsr`),
  },
  {
    route: 'GET /api/proofs/{id}/inclusion?treeSize= (older trees)',
    request: (ctx, n) => get(inclusionPath(ctx, n)),
  },
  {
    route: 'GET /api/log/consistency?from=1&to=<log size>',
    request: (ctx) => get(`/api/log/consistency?from=1&to=${ctx.treeSize}`),
  },
  {
    route: 'GET /log/tile/entries/<last full bundle>',
    request: (ctx) => get(`/log/tile/entries/${lastTile(ctx)}`),
  },
  { route: 'GET /log/tile/0/<last full tile>', request: (ctx) => get(`/log/tile/0/${lastTile(ctx)}`) },
  {
    route: 'POST /api/tsa (1 KiB: as many extensions as fit, valid)',
    request: () => tsaQuery(attackBodies().tsaValid),
  },
  {
    route: 'POST /api/tsa (1 KiB of INTEGERs, invalid)',
    request: () => tsaQuery(attackBodies().tsaInvalid),
  },
  {
    route: 'POST /api/proof/notarize (8192-byte metadata, depth 32)',
    request: (_ctx, n) => post('/api/proof/notarize', 'application/json', maximalNotarize(n)),
  },
  { route: 'GET /api/capabilities', request: () => get('/api/capabilities') },
  { route: 'GET /openapi.json', request: () => get('/openapi.json') },
  { route: 'GET /api/actions', request: () => get('/api/actions') },
];
