import { encodeId, type Call, type CallOptions } from './call.ts';

/** The administrator calls of the client: accounts, API keys and webhooks (X-Service-Admin-Key). */
export function adminCalls(call: Call, adminKey: string | undefined) {
  const id = encodeId;
  const admin = (body?: unknown): CallOptions => ({
    body,
    headers: adminKey ? { 'x-service-admin-key': adminKey } : {},
  });
  return {
    listAccounts: () => call<{ accounts: unknown[] }>('GET', '/api/accounts', admin()),
    createAccount: (body: { name?: string; ownerLabel?: string } = {}) =>
      call<{ account: { id: string } }>('POST', '/api/accounts', admin(body)),
    listApiKeys: (accountId: string) =>
      call<{ apiKeys: unknown[] }>('GET', `/api/accounts/${id(accountId)}/api-keys`, admin()),
    createApiKey: (accountId: string, body: { name?: string; scopes?: string[] } = {}) =>
      call<{ apiKey: { id: string }; key: string }>(
        'POST',
        `/api/accounts/${id(accountId)}/api-keys`,
        admin(body),
      ),
    // Revoking a revoked key answers it unchanged, so a revoke is safe to send again.
    revokeApiKey: (keyId: string) =>
      call<{ apiKey: { id: string; status: string } }>('POST', `/api/api-keys/${id(keyId)}/revoke`, {
        ...admin({}),
        isIdempotent: true,
      }),
    listWebhooks: (accountId: string) =>
      call<{ webhooks: unknown[] }>('GET', `/api/accounts/${id(accountId)}/webhooks`, admin()),
    createWebhook: (accountId: string, body: { url: string; name?: string; events?: string[] }) =>
      call<{ webhook: { id: string }; secret: string }>(
        'POST',
        `/api/accounts/${id(accountId)}/webhooks`,
        admin(body),
      ),
    testWebhook: (webhookId: string) =>
      call<{ delivery: unknown }>('POST', `/api/webhooks/${id(webhookId)}/test`, admin({})),
  };
}
