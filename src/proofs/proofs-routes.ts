import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { normalizeContentHash } from '../core/hashing.ts';
import { AppError } from '../errors.ts';
import type { AppContext } from '../context.ts';
import { requireScope } from '../http/auth.ts';
import { errorResponses } from '../http/openapi.ts';
import {
  NotarizeBody,
  NotarizeResponse,
  ProofDocument,
  ProofIdParams,
  ProofList,
  RecentQuery,
  SearchQuery,
  VerifyReport,
} from './proof-schemas.ts';
import type { Principal } from './proofs-service.ts';

const links = (id: string) => ({ proof: `/proof/${id}`, verify: `/api/verify/proofs/${id}` });
const notFound = (id: string) => new AppError('not_found', `No proof with id ${JSON.stringify(id)}`, { id });

/** SPEC.md §4: proof creation and the public proof reads. */
export async function proofsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.post(
    '/api/proof/notarize',
    {
      schema: {
        summary: 'Create a timestamped proof of a SHA-256 hash',
        description:
          'Send only the hash of your content, a label, optional metadata and an idempotency key. ' +
          'A retry with the same key and content returns the same proof (`idempotentReplay: true`).',
        tags: ['proofs'],
        security: [{}, { apiKey: [] }],
        body: NotarizeBody,
        response: {
          200: {
            description: 'Proof created, or replayed for a repeated idempotency key',
            ...NotarizeResponse,
          },
          ...errorResponses(400, 401, 403, 413, 415, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const apiKey = requireScope(request, 'proofs:write');
      const principal: Principal = apiKey
        ? { kind: 'account', accountId: apiKey.accountId }
        : { kind: 'public' };
      const { proof, isReplay } = await ctx.proofs.notarize(request.body, principal);
      if (isReplay) void reply.header('Idempotent-Replayed', 'true');
      void reply.header('Cache-Control', 'no-store');
      return {
        ok: true,
        mode: ctx.config.paymentMode,
        idempotentReplay: isReplay,
        proof,
        links: links(proof.id),
      };
    },
  );

  api.get(
    '/api/proofs/recent',
    {
      schema: {
        summary: 'Recent proofs, newest first, signatures redacted',
        tags: ['proofs'],
        querystring: RecentQuery,
        response: { 200: { description: 'A page of proofs', ...ProofList }, ...errorResponses(400, 429) },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 20;
      const page = await ctx.proofs.list({}, limit, request.query.cursor);
      return { ok: true, limit, ...page };
    },
  );

  api.get(
    '/api/proofs/search',
    {
      schema: {
        summary: 'Search proofs by id, hash, label, account or idempotency key',
        description: 'Every given parameter must match. Results are newest first, signatures redacted.',
        tags: ['proofs'],
        querystring: SearchQuery,
        response: {
          200: { description: 'A page of matching proofs', ...ProofList },
          ...errorResponses(400, 429),
        },
      },
    },
    async (request) => {
      const { q, contentHash, metadataHash, accountId, idempotencyKey, cursor } = request.query;
      const limit = request.query.limit ?? 20;
      const qHash = q !== undefined && /^sha256:[a-fA-F0-9]{64}$/.test(q) ? q.toLowerCase() : undefined;
      const page = await ctx.proofs.list(
        {
          ...(q !== undefined ? { q: { text: q, folded: q.toLowerCase(), hash: qHash } } : {}),
          ...(contentHash !== undefined ? { contentHash: normalizeContentHash(contentHash) } : {}),
          ...(metadataHash !== undefined ? { metadataHash: metadataHash.toLowerCase() } : {}),
          ...(accountId !== undefined ? { accountId } : {}),
          ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
        },
        limit,
        cursor,
      );
      return { ok: true, limit, ...page };
    },
  );

  api.get(
    '/api/proofs/:id',
    {
      schema: {
        summary: 'The public proof document',
        tags: ['proofs'],
        params: ProofIdParams,
        response: { 200: { description: 'The proof', ...ProofDocument }, ...errorResponses(404, 429) },
      },
    },
    async (request) => {
      const proof = await ctx.proofs.get(request.params.id);
      if (proof === undefined) throw notFound(request.params.id);
      return { ok: true, proof, links: links(proof.id) };
    },
  );

  api.get(
    '/api/verify/proofs/:id',
    {
      schema: {
        summary: 'Verify a proof: recompute its signature now',
        tags: ['proofs'],
        params: ProofIdParams,
        response: {
          200: { description: 'The verification report', ...VerifyReport },
          ...errorResponses(404, 429),
        },
      },
    },
    async (request) => {
      const result = await ctx.proofs.verify(request.params.id);
      if (result === undefined) throw notFound(request.params.id);
      const { proof, isSignatureValid, isReceiptValid, keyId } = result;
      const receiptKeyId = proof.receipt?.keyId ?? '';
      return {
        ok: true,
        proofId: proof.id,
        verified: isSignatureValid && isReceiptValid !== false,
        checks: {
          signature: {
            status: isSignatureValid ? ('valid' as const) : ('invalid' as const),
            algorithm: 'hmac-sha256',
            keyId,
            message: isSignatureValid
              ? 'The HMAC-SHA256 over the signing message matches the stored signature'
              : 'The stored signature does not match the proof fields under its key',
          },
          receipt: {
            status:
              isReceiptValid === null
                ? ('unavailable' as const)
                : isReceiptValid
                  ? ('valid' as const)
                  : ('invalid' as const),
            algorithm: 'ed25519',
            keyId: receiptKeyId,
            message:
              isReceiptValid === null
                ? 'This proof has no public-key receipt'
                : isReceiptValid
                  ? 'The Ed25519 receipt verifies with the published key ' + receiptKeyId
                  : 'The Ed25519 receipt does not verify with the published key',
          },
        },
        keyId,
        signingMessage: result.signingMessage,
        checkedAt: new Date(ctx.clock.now()).toISOString(),
        proof,
      };
    },
  );
}
