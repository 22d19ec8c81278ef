import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified API key of the request, when it sent a valid X-Service-Key. */
    apiKey?: ApiKeyPrincipal;
    /** Why the X-Service-Key sent is refused; raised after the rate limit has counted the request. */
    apiKeyError?: AppError;
  }
}

/** A verified API key, as authentication hands it to a route. */
export interface ApiKeyPrincipal {
  keyId: string;
  accountId: string;
  scopes: string[];
}

/** Whoever knows the API keys (the accounts service): a key's principal, or `refusedApiKey()` thrown. */
interface ApiKeyAuthenticator {
  authenticate(raw: string): Promise<ApiKeyPrincipal>;
}

export function refusedApiKey(): AppError {
  return new AppError('unauthorized', 'The API key in X-Service-Key is not valid');
}

const API_KEY_HEADER = 'x-service-key';

/**
 * API keys on every route: identify the key first, so the rate limit counts a verified key's requests in
 * its own bucket; refuse a bad key only after the limiter has counted it by address, so guessing keys
 * is rate limited too. Call `identify` before the rate limit is registered and `refuse` after.
 */
export function apiKeyHooks(accounts: ApiKeyAuthenticator): {
  identify: onRequestAsyncHookHandler;
  refuse: onRequestAsyncHookHandler;
} {
  return {
    identify: async (request) => {
      const raw = request.headers[API_KEY_HEADER];
      if (raw === undefined) return;
      try {
        // Node joins repeated headers it does not know into one string; anything else is refused alike.
        if (typeof raw !== 'string') throw refusedApiKey();
        request.apiKey = await accounts.authenticate(raw);
        request.rateLimitKey = `key:${request.apiKey.keyId}`;
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        request.apiKeyError = error;
      }
    },
    refuse: async (request) => {
      if (request.apiKeyError) throw request.apiKeyError;
    },
  };
}

/** The API key of the request if it has `scope`; 403 when a valid key lacks it. */
export function requireScope(request: FastifyRequest, scope: string): ApiKeyPrincipal | undefined {
  const key = request.apiKey;
  if (key === undefined) return undefined;
  if (!key.scopes.includes(scope)) {
    throw new AppError('forbidden', `This API key lacks the scope ${scope}`, { requiredScope: scope });
  }
  return key;
}
