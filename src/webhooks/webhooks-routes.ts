import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { IdParams } from '../accounts/accounts-schemas.ts';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { CreateWebhookBody, TestDelivery, WebhookCreated, WebhookList } from './webhooks-schemas.ts';

/** The administrator endpoints for webhooks (docs/webhooks.md); each needs X-Service-Admin-Key. */
export async function webhooksRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // Every route here is an administrator's: it needs X-Service-Admin-Key (http/admin-routes.ts).
  const config = { admin: true };
  const tags = ['administration'];

  api.get(
    '/api/accounts/:id/webhooks',
    {
      config,
      schema: {
        summary: "An account's webhooks, each with its recent deliveries",
        tags,
        params: IdParams,
        response: {
          200: { description: 'Webhooks and deliveries', ...WebhookList },
          ...errorResponses(401, 404, 429),
        },
      },
    },
    async (request) => ({ ok: true, webhooks: await ctx.webhooks.list(request.params.id) }),
  );

  api.post(
    '/api/accounts/:id/webhooks',
    {
      config,
      schema: {
        summary: 'Register a webhook (a receipt sink); the signing secret is in this response only',
        tags,
        params: IdParams,
        body: CreateWebhookBody,
        response: {
          201: { description: 'The webhook and, once, its secret', ...WebhookCreated },
          ...errorResponses(400, 401, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await ctx.webhooks.create(request.params.id, request.body);
      void reply.header('Cache-Control', 'no-store');
      return reply.code(201).send({ ok: true, ...created });
    },
  );

  api.post(
    '/api/webhooks/:id/test',
    {
      config,
      schema: {
        summary: 'Send a signed webhook.test event now and record the delivery',
        tags,
        params: IdParams,
        response: {
          200: { description: 'The recorded delivery', ...TestDelivery },
          ...errorResponses(401, 404, 429),
        },
      },
    },
    async (request) => ({ ok: true, delivery: await ctx.webhooks.sendTest(request.params.id) }),
  );
}
