import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { SERVICE_VERSION } from '../version.ts';
import { ADDRESS_REFUSED, PublicHttpAgent, PublicHttpsAgent } from '../platform/public-agent.ts';

interface SendResult {
  /** The HTTP status, or null when no answer came (refused, timed out, blocked). */
  responseStatus: number | null;
  durationMs: number;
  /** A short machine-readable reason when no answer came: timeout, connection_failed, blocked_address … */
  error: string | null;
  responseExcerpt: string | null;
  /** Seconds from a Retry-After header, when the receiver sent one. */
  retryAfterSeconds: number | null;
}

interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

const EXCERPT_BYTES = 1024;

/**
 * Sends one webhook POST. Redirects are not followed (a 3xx is a failure), the whole exchange has a
 * timeout, and unless private targets are allowed, the agent refuses to connect to any address that is
 * not public unicast, checked on every address DNS resolved at connect time. `lookup` resolves host
 * names (dns.lookup when absent).
 */
export function createWebhookSender(options: {
  timeoutMs: number;
  allowPrivate: boolean;
  lookup?: LookupFunction;
}) {
  const agents = options.allowPrivate
    ? { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) }
    : {
        http: new PublicHttpAgent({ keepAlive: false }).withLookup(options.lookup),
        https: new PublicHttpsAgent({ keepAlive: false }).withLookup(options.lookup),
      };

  return function send(request: WebhookRequest): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(request.url);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs: elapsed() });
      };
      const req = client.request(url, {
        method: 'POST',
        agent: url.protocol === 'https:' ? agents.https : agents.http,
        headers: {
          ...request.headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(request.body),
          'user-agent': `hashproof-webhooks/${SERVICE_VERSION}`,
        },
      });
      const timer = setTimeout(() => {
        req.destroy();
        finish({ responseStatus: null, error: 'timeout', responseExcerpt: null, retryAfterSeconds: null });
      }, options.timeoutMs);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => {
          const excerpt = Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
          const retryAfter = Number(res.headers['retry-after']);
          finish({
            responseStatus: res.statusCode ?? null,
            error: null,
            responseExcerpt: excerpt === '' ? null : excerpt,
            retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : null,
          });
        });
        res.on('error', () =>
          finish({
            responseStatus: res.statusCode ?? null,
            error: 'response_aborted',
            responseExcerpt: null,
            retryAfterSeconds: null,
          }),
        );
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        const blocked = error.code === ADDRESS_REFUSED || /not allowed|private|reserved/i.test(error.message);
        finish({
          responseStatus: null,
          error: blocked ? 'blocked_address' : 'connection_failed',
          responseExcerpt: null,
          retryAfterSeconds: null,
        });
      });
      req.end(request.body);
    });
  };
}

export type WebhookSender = ReturnType<typeof createWebhookSender>;
