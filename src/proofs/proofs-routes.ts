import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Payment } from '../core/payment-authorization.ts';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { NOTARIZE_PATH } from '../core/api-paths.ts';
import { normalizeContentHash } from '../core/hashing.ts';
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
import { proofNotFound, type Principal, type ProofsService } from './proofs-service.ts';
import { SettledNotStored } from './paid-requests.ts';

/** The header of the payer's receipt for a settled payment (x402 v2). */
export const PAYMENT_RESPONSE = 'PAYMENT-RESPONSE';

export const links = (id: string) => ({ proof: `/proof/${id}`, verify: `/api/verify/proofs/${id}` });

/** What a search asks the proofs service for: the given fields, hashes in their stored form. */
export function searchFilterOf(query: SearchQuery): Parameters<ProofsService['list']>[0] {
  const { q, contentHash, metadataHash, accountId, idempotencyKey } = query;
  return {
    ...(q !== undefined ? { q } : {}),
    ...(contentHash !== undefined ? { contentHash: normalizeContentHash(contentHash) } : {}),
    ...(metadataHash !== undefined ? { metadataHash: metadataHash.toLowerCase() } : {}),
    ...(accountId !== undefined ? { accountId } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  };
}

/**
 * Who a proof request is for, and the payment it carries: an API key's account (no payment), the payer
 * of an admitted x402 payment, or the public (demo mode).
 */
export function whoPays(
  request: FastifyRequest,
  gate: AppContext['payments'],
): { principal: Principal; payment: Payment | undefined } {
  const apiKey = requireScope(request, 'proofs:write');
  if (apiKey) return { principal: { kind: 'account', accountId: apiKey.accountId }, payment: undefined };
  const payment = gate?.paymentOf(request);
  if (payment === undefined) return { principal: { kind: 'public' }, payment };
  const { network, payer } = payment.authorization;
  return { principal: { kind: 'payer', network, payer }, payment };
}

/**
 * Runs a paid request's work; when its payment settled but its proofs were not stored, the answer to
 * the error still carries the payer's receipt, and the log line the same value for the operator.
 */
export async function keepingReceipt<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof SettledNotStored)) throw error;
    request.log.error(
      { err: error.cause, payment: error.paymentResponse },
      'payment settled but the proof was not stored',
    );
    void reply.header(PAYMENT_RESPONSE, error.paymentResponse);
    throw error.cause;
  }
}

/** Proof creation and the public proof reads (docs/api.md). */
export async function proofsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  const gate = ctx.payments;
  const notarizeSecurity: Record<string, string[]>[] = gate
    ? [{ x402: [] }, { apiKey: [] }]
    : [{}, { apiKey: [] }];
  api.post(
    NOTARIZE_PATH,
    {
      schema: {
        summary: 'Create a timestamped proof of a SHA-256 hash',
        description:
          'Send only the hash of your content, a label, optional metadata and an idempotency key. ' +
          'A retry with the same key and content returns the same proof (`idempotentReplay: true`). ' +
          (gate
            ? `Paid: ${ctx.config.x402?.price ?? ''} per proof through x402 v2 (402 challenge in PAYMENT-REQUIRED, ` +
              'payment in PAYMENT-SIGNATURE, receipt in PAYMENT-RESPONSE), or free of payment with an API key ' +
              'that has the scope proofs:write.'
            : 'Free in demo mode.'),
        tags: ['proofs'],
        security: notarizeSecurity,
        body: NotarizeBody,
        response: {
          200: {
            description: 'Proof created, or replayed for a repeated idempotency key',
            ...NotarizeResponse,
          },
          ...errorResponses(400, 401, 402, 403, 409, 413, 415, 422, 429, 502, 503),
        },
        ...(gate ? { 'x-payment-info': gate.paymentInfo } : {}),
      },
      // x402: the challenge is answered before the body is read (directory probers rely on it), unless no
      // proof can be made at all.
      onRequest: async (request) => {
        ctx.proofs.assertAccepting();
        if (gate && request.apiKey === undefined) gate.admit(request, ctx.clock.now());
      },
    },
    async (request, reply) => {
      const { principal, payment } = whoPays(request, gate);
      const result = await keepingReceipt(request, reply, () =>
        ctx.proofs.notarize(request.body, principal, payment ? { payment } : {}),
      );
      const { proof, isReplay, paymentResponse } = result;
      if (paymentResponse !== undefined) void reply.header(PAYMENT_RESPONSE, paymentResponse);
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
      const limit = request.query.limit ?? 20;
      const page = await ctx.proofs.list(searchFilterOf(request.query), limit, request.query.cursor);
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
      if (proof === undefined) throw proofNotFound(request.params.id);
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
      if (result === undefined) throw proofNotFound(request.params.id);
      const { proof, report } = result;
      const { checks } = report;
      return {
        ok: true,
        proofId: proof.id,
        verified: report.verified,
        checks: {
          signature: { ...checks.signature, algorithm: 'hmac-sha256', keyId: proof.keyId },
          receipt: { ...checks.receipt, algorithm: 'ed25519', keyId: proof.receipt?.keyId ?? '' },
          timestamp: { ...checks.timestamp, algorithm: 'rfc3161-ecdsa-p256-sha256', keyId: ctx.tsa.keyId },
          inclusion: {
            ...checks.inclusion,
            algorithm: 'rfc6962-sha256+ed25519-checkpoint',
            keyId: ctx.keyring.logKey.keyId,
          },
        },
        keyId: proof.keyId,
        signingMessage: report.signingMessage,
        checkedAt: new Date(ctx.clock.now()).toISOString(),
        proof,
      };
    },
  );
}
