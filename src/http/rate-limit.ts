import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../errors.ts';
import { ClientTurns } from './client-turns.ts';

/** `config: { rateLimit: false }` (declared by @fastify/rate-limit) exempts a route. */
declare module 'fastify' {
  interface FastifyRequest {
    /** Set by authentication once an API key is verified, so its requests share one bucket. */
    rateLimitKey?: string;
    /**
     * Counts this request as `weight` requests in all (a batch: one for each started hundred items),
     * or refuses it whole with 429 when fewer remain. Absent when no rate limit is configured.
     */
    chargeRateLimit?: (weight: number) => Promise<void>;
  }
}

interface RateLimitOptions {
  max: number;
  /** Requests of one client handled at once (`ClientTurns`); the others wait their turn. */
  maxInFlight?: number;
  windowMs: number;
  /** A shared store (an ioredis client) so several instances count together; in-memory when absent. */
  redis?: Redis;
  /** Prefix of the Redis keys. */
  nameSpace?: string;
}

/** Requests of one client handled at once; more wait (a browser opens about six connections). */
const MAX_IN_FLIGHT_PER_CLIENT = 4;

/** The client a request counts for: its verified API key, else its address. */
const clientKey = (request: FastifyRequest): string =>
  request.rateLimitKey ?? `ip:${normalizeIP(request.ip, 64)}`;

/**
 * A fixed window per client, the verified API key else the client address (docs/api.md, "Rate
 * limit"), announced with the IETF RateLimit-Policy / RateLimit fields on every limited response, and a
 * 429 `rate_limited` with Retry-After. The plugin cannot emit the IETF fields itself, so it only counts.
 */
export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: false,
    max: options.max,
    timeWindow: options.windowMs,
    // If Redis fails, requests are let through rather than refused: the limit protects, it is not a gate.
    ...(options.redis
      ? { redis: options.redis, skipOnError: true, nameSpace: options.nameSpace ?? 'hashproof-rl:' }
      : {}),
  });
  const windowSeconds = Math.ceil(options.windowMs / 1000);
  const limiter = app.createRateLimit({ keyGenerator: clientKey });
  const policy = `"default";q=${options.max};w=${windowSeconds}`;
  const turns = new ClientTurns(options.maxInFlight ?? MAX_IN_FLIGHT_PER_CLIENT);

  const refuse = (resetSeconds: number, weight: number) =>
    new AppError(
      'rate_limited',
      weight > 1
        ? `Too many requests: this request counts as ${weight} and fewer remain of the limit of ${options.max} per ${windowSeconds} s; retry in ${resetSeconds} s`
        : `Too many requests: the limit is ${options.max} per ${windowSeconds} s; retry in ${resetSeconds} s`,
      {
        limit: options.max,
        windowSeconds,
        retryAfterSeconds: resetSeconds,
        ...(weight > 1 ? { weight } : {}),
      },
      { 'Retry-After': String(resetSeconds) },
    );
  const announce = (reply: FastifyReply, remaining: number, resetSeconds: number) => {
    void reply.header('RateLimit-Policy', policy);
    void reply.header('RateLimit', `"default";r=${remaining};t=${resetSeconds}`);
  };

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.rateLimit === false) return;
    const result = await limiter(request);
    if (!result.isAllowed) {
      const resetSeconds = Math.max(1, result.ttlInSeconds);
      announce(reply, result.remaining, resetSeconds);
      if (result.isExceeded) throw refuse(resetSeconds, 1);
      let remaining = result.remaining;
      request.chargeRateLimit = async (weight) => {
        const extra = weight - 1;
        if (extra <= 0) return;
        // Refused whole, before anything more is counted, when the rest of the window cannot hold it.
        if (extra > remaining) throw refuse(resetSeconds, weight);
        for (let i = 0; i < extra; i++) {
          const more = await limiter(request);
          if (more.isAllowed) return;
          remaining = more.remaining;
          announce(reply, remaining, Math.max(1, more.ttlInSeconds));
          if (more.isExceeded) throw refuse(Math.max(1, more.ttlInSeconds), weight);
        }
      };
    }
    // Within its allowance, a client's requests still take their turn (docs/security.md).
    const client = clientKey(request);
    reply.raw.once('close', () => turns.leave(client));
    await turns.enter(client);
  });
}
