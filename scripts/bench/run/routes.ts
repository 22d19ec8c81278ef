/** The routes of the throughput benchmark, and the baseline each is compared with. */
import type autocannon from 'autocannon';
import { seedHash, seedLabel } from '../seed.ts';

/** A route under benchmark: its name in the report, and what autocannon sends. */
export interface BenchRoute {
  route: string;
  opts: autocannon.Options;
}

const notarizeBody = (key: string) =>
  JSON.stringify({
    contentHash: seedHash(Number.MAX_SAFE_INTEGER - Math.floor(Math.random() * 1e9)),
    label: 'benchmark artifact',
    metadata: { run: 1 },
    idempotencyKey: key,
  });

/**
 * The bare server sending the bytes of `GET /api/proofs/{id}` (the same body and headers): what a read
 * that costs nothing would reach, given the size of the answer the API defines.
 */
export const BARE_READ = 'bare Fastify sending the answer of GET /api/proofs/{id}';
/** Headers that describe one connection or one moment, not the answer. */
const PER_CONNECTION = new Set(['connection', 'keep-alive', 'date', 'content-length', 'transfer-encoding']);

const json = { 'content-type': 'application/json' };
const replayKey = 'bench-replay';
/** A new proof's request to the server at `base` (the service, or the bare server for the baseline). */
const notarizeAt = (base: string) => ({
  url: `${base}/api/proof/notarize`,
  method: 'POST' as const,
  headers: json,
});

/**
 * Creates the proof the read routes ask for (with the idempotency key the replay route sends again), and
 * gives the bare server the bytes of the service's answer to a read of it, for the ceiling of the reads.
 */
export async function prepareProof(
  service: string,
  bare: string,
): Promise<{ proofId: string; replayBody: string }> {
  const created = await fetch(`${service}/api/proof/notarize`, {
    method: 'POST',
    headers: json,
    body: notarizeBody(replayKey),
  });
  const replayBody = await created.text();
  const proofId = (JSON.parse(replayBody) as { proof: { id: string } }).proof.id;
  const read = await fetch(`${service}/api/proofs/${proofId}`);
  const readBody = await read.text();
  await fetch(`${bare}/copy`, {
    method: 'PUT',
    headers: json,
    body: JSON.stringify({
      body: readBody,
      headers: Object.fromEntries([...read.headers].filter(([name]) => !PER_CONNECTION.has(name))),
    }),
  });
  const copy = await fetch(`${bare}/copy`);
  if ((await copy.text()) !== readBody || [...copy.headers].length < [...read.headers].length)
    throw new Error('the bare server does not send the answer it was given');
  return { proofId, replayBody };
}

/**
 * The routes in the order of the report, and the baseline (the bare server taking a new proof's body):
 * `seededIds` are read one after another by the routes over many proofs, and the searches look for seed
 * number `proofs / 2`.
 */
export function benchRoutes(target: {
  service: string;
  bare: string;
  proofId: string;
  replayBody: string;
  seededIds: string[];
  proofs: number;
}): { routes: BenchRoute[]; baseline: autocannon.Options } {
  const { service, bare, proofId, replayBody, seededIds } = target;
  const sampleN = Math.floor(target.proofs / 2);
  let counter = 0;
  // Many different proofs, one after another: reads the cache cannot answer, and caches filled.
  let next = 0;
  const overSeeded = (path: string) => ({
    route: `GET ${path}{id} (${seededIds.length} proofs)`,
    opts: {
      url: service,
      requests: [
        {
          setupRequest: (req: autocannon.Request) => ({
            ...req,
            path: `${path}${seededIds[next++ % seededIds.length] ?? proofId}`,
          }),
        },
      ],
    },
  });
  const routes: BenchRoute[] = [
    {
      route: 'POST /api/proof/notarize (new keys)',
      opts: {
        ...notarizeAt(service),
        requests: [
          { setupRequest: (req) => ({ ...req, body: notarizeBody(`bench-${process.pid}-${counter++}`) }) },
        ],
      },
    },
    {
      route: 'POST /api/proof/notarize (replay)',
      opts: {
        ...notarizeAt(service),
        body: JSON.stringify({ ...(JSON.parse(notarizeBody(replayKey)) as object), ...pick(replayBody) }),
      },
    },
    { route: 'GET /api/proofs/{id}', opts: { url: `${service}/api/proofs/${proofId}` } },
    { route: BARE_READ, opts: { url: `${bare}/copy` } },
    overSeeded('/api/proofs/'),
    { route: 'GET /api/verify/proofs/{id}', opts: { url: `${service}/api/verify/proofs/${proofId}` } },
    overSeeded('/api/verify/proofs/'),
    { route: 'GET /api/proofs/recent', opts: { url: `${service}/api/proofs/recent` } },
    {
      route: 'GET /api/proofs/search?contentHash',
      opts: { url: `${service}/api/proofs/search?contentHash=${seedHash(sampleN)}` },
    },
    {
      route: 'GET /api/proofs/search?q (label)',
      opts: { url: `${service}/api/proofs/search?q=${encodeURIComponent(seedLabel(sampleN))}` },
    },
  ];
  const baseline: autocannon.Options = {
    ...notarizeAt(bare),
    requests: [{ setupRequest: (req) => ({ ...req, body: notarizeBody(`bare-${counter++}`) }) }],
  };
  return { routes, baseline };
}

/** The request fields of a stored proof, so the replay benchmark sends exactly the same request. */
function pick(body: string): Record<string, unknown> {
  const { proof } = JSON.parse(body) as { proof: { contentHash: string; label: string } };
  return { contentHash: proof.contentHash, label: proof.label };
}
