import http from 'node:http';
import https from 'node:https';
import { ADDRESS_REFUSED, PublicHttpAgent, PublicHttpsAgent } from './public-agent.ts';

/**
 * Requests to outside parties the operator configures (anchoring's authorities, calendars and header
 * server; witnesses): an endpoint built from its configured URL, whose credentials (user info, sent as
 * HTTP Basic) are used and never shown; connections, unless private addresses are allowed, only to
 * public addresses, checked as each is made (the agent webhooks use); no redirect followed; the answer
 * read up to a size limit. Each caller words the failures in its own terms.
 */

/** An outside endpoint as configured: where to send, and the name it is shown by. */
export class OutsideEndpoint {
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

export interface OutsideAgents {
  http: http.Agent;
  https: https.Agent;
}

/** The agents of outside requests: to public addresses only unless `allowPrivate`. */
export function outsideAgents(allowPrivate: boolean, keepAlive: boolean): OutsideAgents {
  return allowPrivate
    ? { http: new http.Agent({ keepAlive }), https: new https.Agent({ keepAlive }) }
    : { http: new PublicHttpAgent({ keepAlive }), https: new PublicHttpsAgent({ keepAlive }) };
}

/** An answer refused as it came: a redirect, more than the limit, or one that broke off. */
export class AnswerRefused extends Error {
  readonly kind: 'redirected' | 'too_large' | 'broke_off';
  /** The redirect's status, or the declared length over the limit. */
  readonly figure: number | undefined;
  /** For `broke_off`: the request's signal had fired (its time ran out, or its caller stopped). */
  readonly aborted: boolean;

  constructor(kind: AnswerRefused['kind'], figure?: number, aborted = false) {
    super(kind);
    this.name = 'AnswerRefused';
    this.kind = kind;
    this.figure = figure;
    this.aborted = aborted;
  }
}

export interface OutsideAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/**
 * One request to `url`, its answer read whole up to `limit` bytes. Rejects with AnswerRefused for a
 * redirect, an answer over the limit (declared or counted) or one that broke off; with the socket's
 * error otherwise (see `isAddressRefused`).
 */
export function boundedRequest(
  url: URL,
  options: {
    method: 'GET' | 'POST';
    agents: OutsideAgents;
    headers: Record<string, string>;
    body?: Buffer | undefined;
    signal: AbortSignal;
    limit: number;
  },
): Promise<OutsideAnswer> {
  const { limit, signal } = options;
  const secure = url.protocol === 'https:';
  return new Promise<OutsideAnswer>((resolve, reject) => {
    const req = (secure ? https : http).request(url, {
      method: options.method,
      agent: secure ? options.agents.https : options.agents.http,
      headers: options.headers,
      signal,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      res.on('error', reject);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.destroy();
        return reject(new AnswerRefused('redirected', status));
      }
      const length = Number(res.headers['content-length'] ?? 0);
      if (length > limit) {
        res.destroy();
        return reject(new AnswerRefused('too_large', length));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          res.destroy();
          reject(new AnswerRefused('too_large'));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('close', () => {
        if (!res.complete) reject(new AnswerRefused('broke_off', undefined, signal.aborted));
      });
    });
    req.end(options.body);
  });
}

/** Whether a request failed because its address is not a public one (the public agent refused it). */
export function isAddressRefused(error: unknown): boolean {
  return (
    (error as NodeJS.ErrnoException).code === ADDRESS_REFUSED ||
    /not allowed|private|reserved/i.test((error as Error).message)
  );
}
