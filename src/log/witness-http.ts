import {
  AnswerRefused,
  boundedRequest,
  isAddressRefused,
  OutsideEndpoint,
  outsideAgents,
  type OutsideAgents,
} from '../platform/outside-request.ts';

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
  readonly #endpoint: OutsideEndpoint;
  /** Where `add-checkpoint` is sent. */
  readonly addCheckpoint: URL;

  constructor(configured: string) {
    this.#endpoint = new OutsideEndpoint(configured);
    this.addCheckpoint = this.#endpoint.urlOf('/add-checkpoint');
  }

  /** `scheme://host[:port]/path`: the only form of it that is stored, logged and shown. */
  get shown(): string {
    return this.#endpoint.name;
  }

  get authorization(): string | undefined {
    return this.#endpoint.authorization;
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
  // Keep-alive, as tlog-witness asks of clients; every new connection is checked again.
  readonly #agents: OutsideAgents;

  constructor(allowPrivate: boolean) {
    this.#agents = outsideAgents(allowPrivate, true);
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
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = AbortSignal.any([timeout, options.signal]);
    const payload = Buffer.from(body, 'utf8');
    const headers: Record<string, string> = {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(payload.length),
    };
    if (endpoint.authorization !== undefined) headers.authorization = endpoint.authorization;
    try {
      const answer = await boundedRequest(endpoint.addCheckpoint, {
        method: 'POST',
        agents: this.#agents,
        headers,
        body: payload,
        signal,
        limit,
      });
      return { status: answer.status, contentType: answer.headers['content-type'] ?? '', body: answer.body };
    } catch (error) {
      if (error instanceof AnswerRefused) {
        if (error.kind === 'redirected')
          throw new WitnessFailure(`redirected (HTTP ${error.figure}), not followed`);
        if (error.kind === 'too_large')
          throw new WitnessFailure(
            error.figure === undefined
              ? `an answer over ${limit} bytes`
              : `an answer of ${error.figure} bytes, over ${limit}`,
          );
        throw new WitnessFailure('the answer broke off');
      }
      if (timeout.aborted) throw new WitnessFailure(`no answer within ${timeoutMs} ms`);
      if (signal.aborted) throw new WitnessFailure('the service is stopping');
      if (isAddressRefused(error))
        throw new WitnessFailure('not a public address, refused (WITNESS_ALLOW_PRIVATE_URLS allows it)');
      const code = (error as NodeJS.ErrnoException).code;
      throw new WitnessFailure(`unreachable${code === undefined ? '' : ` (${code})`}`);
    }
  }
}
