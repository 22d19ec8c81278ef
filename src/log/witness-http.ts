import http from 'node:http';
import https from 'node:https';
import { ADDRESS_REFUSED, PublicHttpAgent, PublicHttpsAgent } from '../platform/public-agent.ts';

/**
 * Requests to witnesses (C2SP tlog-witness `add-checkpoint`): each witness is an endpoint built from
 * its configured URL, whose credentials (user info, sent as HTTP Basic) are used and never shown;
 * connections go, unless private addresses are allowed, only to public addresses, checked as each is
 * made (the agent webhooks and anchors use); no redirect is followed; the whole exchange has a time
 * limit and the answer a size limit.
 */

/** Why a request to a witness failed, fit for a log line and /api/status (no credentials in it). */
export class WitnessFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WitnessFailure';
  }
}

export interface WitnessAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

/** A witness's submission prefix as configured: where to send, and the name it is shown by. */
export class WitnessAddress {
  /** `scheme://host[:port]/path`: the only form of it that is stored, logged and shown. */
  readonly shown: string;
  readonly #url: URL;
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
    this.shown = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/add-checkpoint`;
    this.#url = url;
  }

  get addCheckpoint(): URL {
    return this.#url;
  }

  get authorization(): string | undefined {
    return this.#authorization;
  }
}

export interface WitnessRequestOptions {
  /** The largest answer read. */
  limit: number;
  timeoutMs: number;
  /** Cuts the request short (the worker stopping). */
  signal: AbortSignal;
}

/** Sends `add-checkpoint` requests, to public addresses only unless `allowPrivate`. */
export class WitnessClient {
  readonly #agents: { http: http.Agent; https: https.Agent };

  constructor(allowPrivate: boolean) {
    // Keep-alive, as tlog-witness asks of clients; every new connection is checked again.
    this.#agents = allowPrivate
      ? { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) }
      : {
          http: new PublicHttpAgent({ keepAlive: true }),
          https: new PublicHttpsAgent({ keepAlive: true }),
        };
  }

  /** Closes the idle connections. */
  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  /** POST `<prefix>/add-checkpoint` with `body`; any failure to get a whole answer is a WitnessFailure. */
  async addCheckpoint(
    endpoint: WitnessAddress,
    body: string,
    options: WitnessRequestOptions,
  ): Promise<WitnessAnswer> {
    const { limit, timeoutMs } = options;
    const url = endpoint.addCheckpoint;
    const secure = url.protocol === 'https:';
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([timeout, options.signal]);
    const payload = Buffer.from(body, 'utf8');
    const headers: Record<string, string> = {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(payload.length),
    };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    try {
      return await new Promise<WitnessAnswer>((resolve, reject) => {
        const req = (secure ? https : http).request(url, {
          method: 'POST',
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
            return reject(new WitnessFailure(`redirected (HTTP ${status}), not followed`));
          }
          const length = Number(res.headers['content-length'] ?? 0);
          if (length > limit) {
            res.destroy();
            return reject(new WitnessFailure(`an answer of ${length} bytes, over ${limit}`));
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) {
              res.destroy();
              reject(new WitnessFailure(`an answer over ${limit} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () =>
            resolve({ status, contentType: res.headers['content-type'] ?? '', body: Buffer.concat(chunks) }),
          );
          res.on('close', () => {
            if (!res.complete) reject(new WitnessFailure('the answer broke off'));
          });
        });
        req.end(payload);
      });
    } catch (error) {
      if (error instanceof WitnessFailure) throw error;
      if (timeout.aborted) throw new WitnessFailure(`no answer within ${timeoutMs} ms`);
      if (signal.aborted) throw new WitnessFailure('the service is stopping');
      const code = (error as NodeJS.ErrnoException).code;
      if (code === ADDRESS_REFUSED || /not allowed|private|reserved/i.test((error as Error).message))
        throw new WitnessFailure('not a public address, refused (WITNESS_ALLOW_PRIVATE_URLS allows it)');
      throw new WitnessFailure(`unreachable${code === undefined ? '' : ` (${code})`}`);
    }
  }
}
