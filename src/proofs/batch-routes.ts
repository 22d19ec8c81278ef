import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { BATCH_PATH } from '../core/api-paths.ts';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { BATCH_MAX_BYTES, BATCH_MAX_ITEMS, batchWeight, firstOfEachKey, readItems } from './batch-items.ts';
import { BatchBody, BatchResponse } from './proof-schemas.ts';
import { keepingReceipt, links, PAYMENT_RESPONSE, whoPays } from './proofs-routes.ts';

/** The items of a body not yet checked against the schema: the array it names, if any. */
function itemsOf(body: unknown): unknown[] | undefined {
  const items = (body as { items?: unknown } | null | undefined)?.items;
  return Array.isArray(items) ? items : undefined;
}

/**
 * How many new proofs a batch could make, as far as it can be told without a payer: its valid items,
 * one per idempotency key; undefined for a body that is not a batch of 1 to 1,000 items.
 */
function newItemCount(body: unknown): number | undefined {
  const items = itemsOf(body);
  if (items === undefined || items.length === 0 || items.length > BATCH_MAX_ITEMS) return undefined;
  return firstOfEachKey(readItems(items)).length;
}

/** Up to 1,000 proofs in one request (docs/api.md, "Batches"). */
export async function batchRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const gate = ctx.payments;

  api.post(
    BATCH_PATH,
    {
      bodyLimit: BATCH_MAX_BYTES,
      schema: {
        summary: 'Create up to 1,000 proofs in one request',
        description:
          'Each item is a notarize body, checked and answered as POST /api/proof/notarize would answer it ' +
          'alone, in the same order: one bad item fails only itself. Two items with one idempotency key: ' +
          "the second answers the first's proof as a replay (422 for other content). New proofs are " +
          'committed together; each carries its RFC 3161 token inline (`evidence.timestampToken`). ' +
          'Counts one request against the rate limit per started hundred items. ' +
          (gate
            ? `Paid: ${gate.price} per new proof through x402 v2: the challenge asks ${gate.price} × the ` +
              'count of items not already answered (counted again when the payment is verified: another ' +
              'count answers 402 with new terms); or with an API key that has the scope proofs:write.'
            : 'Free in demo mode.'),
        tags: ['proofs'],
        security: gate ? [{ x402: [] }, { apiKey: [] }] : [{}, { apiKey: [] }],
        body: BatchBody,
        response: {
          200: { description: 'One answer per item, in request order', ...BatchResponse },
          ...errorResponses(400, 401, 402, 403, 409, 413, 415, 429, 502, 503),
        },
        ...(gate ? { 'x-payment-info': gate.batchPaymentInfo } : {}),
      },
      onRequest: async () => ctx.proofs.assertAccepting(),
      // Once the body is read and before it is checked: the batch's weight against the rate limit, and
      // under x402 its terms, which depend on how many items it has.
      preValidation: async (request) => {
        const size = Math.min(itemsOf(request.body)?.length ?? 1, BATCH_MAX_ITEMS);
        await request.chargeRateLimit?.(batchWeight(size));
        if (gate === undefined || request.apiKey !== undefined) return;
        const count = newItemCount(request.body);
        // Nothing to pay for: every item fails its checks, and each is answered with its error.
        if (count === 0 && request.headers['payment-signature'] === undefined) return;
        // A body that is not a batch still learns the terms of one proof (what directory probers read).
        await gate.admitBatch(request, ctx.clock.now(), () => Math.max(1, count ?? 1));
      },
    },
    async (request, reply) => {
      const { principal, payment } = whoPays(request, gate);
      const result = await keepingReceipt(request, reply, () =>
        ctx.proofs.notarizeBatch((request.body as BatchBody).items, principal, payment ? { payment } : {}),
      );
      if (result.paymentResponse !== undefined) void reply.header(PAYMENT_RESPONSE, result.paymentResponse);
      void reply.header('Cache-Control', 'no-store');
      return {
        ok: true,
        mode: ctx.config.paymentMode,
        items: result.items.map((item) =>
          item.ok
            ? {
                ok: true,
                idempotentReplay: item.isReplay,
                proof: item.proof,
                links: links(item.proof.id),
                evidence: { timestampToken: item.timestampToken },
              }
            : { ok: false, error: item.error.toEnvelope().error },
        ),
      };
    },
  );
}
