import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.ts';
import { errorResponses } from '../http/openapi.ts';
import { defaultEmptyBody } from '../http/validation.ts';
import {
  AccountList,
  AccountResponse,
  ApiKeyCreated,
  ApiKeyList,
  ApiKeyResponse,
  CreateAccountBody,
  CreateApiKeyBody,
  IdParams,
} from './accounts-schemas.ts';

/** Administrator endpoints for accounts and API keys (docs/webhooks.md); each needs X-Service-Admin-Key. */
export async function accountsRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // Every route here is an administrator's: it needs X-Service-Admin-Key (http/admin-routes.ts).
  const config = { admin: true };
  const tags = ['administration'];

  api.get(
    '/api/accounts',
    {
      config,
      schema: {
        summary: 'List accounts',
        tags,
        response: { 200: { description: 'Every account', ...AccountList }, ...errorResponses(401, 429) },
      },
    },
    async () => ({ ok: true, accounts: await ctx.accounts.listAccounts() }),
  );

  api.post(
    '/api/accounts',
    {
      config,
      preValidation: defaultEmptyBody,
      schema: {
        summary: 'Create an account',
        tags,
        body: CreateAccountBody,
        response: {
          201: { description: 'The account', ...AccountResponse },
          ...errorResponses(400, 401, 429),
        },
      },
    },
    async (request, reply) => {
      const account = await ctx.accounts.createAccount(request.body);
      return reply.code(201).send({ ok: true, account });
    },
  );

  api.get(
    '/api/accounts/:id/api-keys',
    {
      config,
      schema: {
        summary: "List an account's API keys (redacted: never the raw key)",
        tags,
        params: IdParams,
        response: { 200: { description: 'The keys', ...ApiKeyList }, ...errorResponses(401, 404, 429) },
      },
    },
    async (request) => ({ ok: true, apiKeys: await ctx.accounts.listApiKeys(request.params.id) }),
  );

  api.post(
    '/api/accounts/:id/api-keys',
    {
      config,
      preValidation: defaultEmptyBody,
      schema: {
        summary: 'Create an API key; the raw key is in this response only',
        tags,
        params: IdParams,
        body: CreateApiKeyBody,
        response: {
          201: { description: 'The key and, once, its raw value', ...ApiKeyCreated },
          ...errorResponses(400, 401, 404, 429),
        },
      },
    },
    async (request, reply) => {
      const created = await ctx.accounts.createApiKey(request.params.id, request.body);
      void reply.header('Cache-Control', 'no-store');
      return reply.code(201).send({ ok: true, ...created });
    },
  );

  api.post(
    '/api/api-keys/:id/revoke',
    {
      config,
      schema: {
        summary: 'Revoke an API key (idempotent); it is refused from now on',
        tags,
        params: IdParams,
        response: {
          200: { description: 'The revoked key', ...ApiKeyResponse },
          ...errorResponses(401, 404, 429),
        },
      },
    },
    async (request) => ({ ok: true, apiKey: await ctx.accounts.revokeApiKey(request.params.id) }),
  );
}
