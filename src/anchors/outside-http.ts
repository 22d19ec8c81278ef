import http from 'node:http';
import https from 'node:https';
import { ADDRESS_REFUSED, PublicHttpAgent, PublicHttpsAgent } from '../platform/public-agent.ts';

/**
 * Requests to the outside parties of anchoring: RFC 3161 authorities, OpenTimestamps calendars and the
 * Bitcoin header server (docs/deploy.md, "Anchors"). Each is an `Endpoint` built from its configured
 * URL, whose credentials are used and never shown; every connection goes, unless private addresses
 * are allowed, only to public addresses, checked when it is made (the agent webhooks use); no redirect
 * is followed; the whole exchange has a time limit and the answer a size limit.
 */

/** How long one request may take, answer included. */
export const REQUEST_TIMEOUT_MS = 10_000;

export class AnchorFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnchorFailure';
  }
}

/** An authority, calendar or header server as configured: where to send, and the name it is shown by. */
export class Endpoint {
  /** `scheme://host[:port]/path`: the only form of it that is stored, logged and shown. */
  readonly name: string;
  readonly #base: URL;
  readonly #authorization: string | undefined;

  constructor(configured: string) {
    const url = new URL(configured);
    const user = decodeURIComponent(url.username);
    const password = decodeURIComponent(url.password);
    this.#authorization =
      user || password ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` : undefined;
    url.username = '';
    url.password = '';
    url.hash = '';
    this.#base = url;
    this.name = shownName(configured);
  }

  /** The URL of `suffix` below the endpoint's path, its query kept. */
  urlOf(suffix: string): URL {
    const url = new URL(this.#base);
    url.pathname = url.pathname.replace(/\/+$/, '') + suffix;
    return url;
  }

  get authorization(): string | undefined {
    return this.#authorization;
  }
}

/** `scheme://host[:port]/path` of a URL, without user info, query or fragment (trailing slashes dropped). */
export function shownName(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
}

export interface OutsideRequest {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer;
  /** The largest answer read. */
  limit: number;
  /** Cuts the request short (the anchoring pass's own deadline). */
  signal?: AbortSignal;
  /** How the endpoint is named in a failure ("OpenTimestamps calendar https://…"). */
  what: string;
}

export interface OutsideAnswer {
  status: number;
  body: Buffer;
}

/** Sends requests to outside endpoints, to public addresses only unless `allowPrivate`. */
export class OutsideClient {
  readonly #agents: { http: http.Agent; https: https.Agent };

  constructor(allowPrivate: boolean) {
    this.#agents = allowPrivate
      ? { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) }
      : {
          http: new PublicHttpAgent({ keepAlive: false }),
          https: new PublicHttpsAgent({ keepAlive: false }),
        };
  }

  /** One request to `suffix` below `endpoint`; any failure is an AnchorFailure naming it by `what`. */
  async request(endpoint: Endpoint, suffix: string, options: OutsideRequest): Promise<OutsideAnswer> {
    const { what, limit } = options;
    const url = endpoint.urlOf(suffix);
    const secure = url.protocol === 'https:';
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const failure = (error: unknown): AnchorFailure => {
      if (error instanceof AnchorFailure) return error;
      if (timeout.aborted) return new AnchorFailure(`${what}: no answer within ${REQUEST_TIMEOUT_MS} ms`);
      if (signal.aborted) return new AnchorFailure(`${what}: the anchoring pass ran out of time`);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === ADDRESS_REFUSED || /not allowed|private|reserved/i.test((error as Error).message))
        return new AnchorFailure(
          `${what}: not a public address, refused (ANCHOR_ALLOW_PRIVATE_URLS allows it): ${(error as Error).message}`,
        );
      return new AnchorFailure(`${what}: unreachable`);
    };
    const headers: Record<string, string> = { ...options.headers };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    if (options.body !== undefined) headers['content-length'] = String(options.body.length);
    try {
      return await new Promise<OutsideAnswer>((resolve, reject) => {
        const client = secure ? https : http;
        const req = client.request(url, {
          method: options.method ?? 'GET',
          agent: secure ? this.#agents.https : this.#agents.http,
          headers,
          signal,
        });
        req.on('error', reject);
        req.on('response', (res) => {
          res.on('error', reject);
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            res.destroy();
            return reject(new AnchorFailure(`${what}: redirected (HTTP ${status}), not followed`));
          }
          const length = Number(res.headers['content-length'] ?? 0);
          if (length > limit) {
            res.destroy();
            return reject(new AnchorFailure(`${what}: answer of ${length} bytes is over ${limit}`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) {
              res.destroy();
              reject(new AnchorFailure(`${what}: answer over ${limit} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
          res.on('close', () => {
            if (!res.complete)
              reject(
                signal.aborted ? new Error('aborted') : new AnchorFailure(`${what}: the answer broke off`),
              );
          });
        });
        req.end(options.body);
      });
    } catch (error) {
      throw failure(error);
    }
  }
}
