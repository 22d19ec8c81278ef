import {
  AnswerRefused,
  boundedRequest,
  isAddressRefused,
  outsideAgents,
  type OutsideAgents,
  type OutsideAnswer,
  type OutsideEndpoint as Endpoint,
} from '../platform/outside-request.ts';

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
export { OutsideEndpoint as Endpoint, shownName } from '../platform/outside-request.ts';

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

export type { OutsideAnswer } from '../platform/outside-request.ts';

/** Sends requests to outside endpoints, to public addresses only unless `allowPrivate`. */
export class OutsideClient {
  readonly #agents: OutsideAgents;

  constructor(allowPrivate: boolean) {
    this.#agents = outsideAgents(allowPrivate, false);
  }

  /** One request to `suffix` below `endpoint`; any failure is an AnchorFailure naming it by `what`. */
  async request(endpoint: Endpoint, suffix: string, options: OutsideRequest): Promise<OutsideAnswer> {
    const { what, limit } = options;
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const headers: Record<string, string> = { ...options.headers };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    if (options.body !== undefined) headers['content-length'] = String(options.body.length);
    try {
      return await boundedRequest(endpoint.urlOf(suffix), {
        method: options.method ?? 'GET',
        agents: this.#agents,
        headers,
        body: options.body,
        signal,
        limit,
      });
    } catch (error) {
      if (error instanceof AnswerRefused && !(error.kind === 'broke_off' && error.aborted)) {
        if (error.kind === 'redirected')
          throw new AnchorFailure(`${what}: redirected (HTTP ${error.figure}), not followed`);
        if (error.kind === 'too_large')
          throw new AnchorFailure(
            error.figure === undefined
              ? `${what}: answer over ${limit} bytes`
              : `${what}: answer of ${error.figure} bytes is over ${limit}`,
          );
        throw new AnchorFailure(`${what}: the answer broke off`);
      }
      if (timeout.aborted) throw new AnchorFailure(`${what}: no answer within ${REQUEST_TIMEOUT_MS} ms`);
      if (signal.aborted) throw new AnchorFailure(`${what}: the anchoring pass ran out of time`);
      if (isAddressRefused(error))
        throw new AnchorFailure(
          `${what}: not a public address, refused (ANCHOR_ALLOW_PRIVATE_URLS allows it): ${(error as Error).message}`,
        );
      throw new AnchorFailure(`${what}: unreachable`);
    }
  }
}
