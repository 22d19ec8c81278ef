/**
 * What the service says is left of its rate limit, read from the IETF fields of its answers
 * (`RateLimit: "default";r=<remaining>;t=<seconds to reset>`, `RateLimit-Policy: "default";q=<max>;w=<window>`),
 * so a client that sends many requests waits before the limit is met instead of being refused with a 429.
 */
export interface RateLimitState {
  /** Requests left in the current window, as last told and less those sent since. */
  remaining: number;
  /** When the window resets (ms since the epoch): the allowance is whole again from then. */
  resetAtMs: number;
  /** The allowance of a window, when the policy was told. */
  quota: number | undefined;
}

/** The value of a parameter (`r`, `t`, `q`, `w`) of a structured field such as `"default";r=5;t=30`. */
function parameter(field: string, name: string): number | undefined {
  const match = new RegExp(`;\\s*${name}=(\\d{1,12})(?:;|,|\\s|$)`).exec(field);
  return match ? Number(match[1]) : undefined;
}

/**
 * The rate limit a client has met so far, updated from every answer's headers and spent by `pace`
 * before each request. A service that sends no RateLimit field (no limit) is never waited for.
 */
export class RateBudget {
  #state: RateLimitState | undefined;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #now: () => number;
  /** Hears each wait before it starts (how long, in ms), for a progress line. */
  onWait: ((ms: number) => void) | undefined;

  constructor(sleep: (ms: number) => Promise<void>, now: () => number = Date.now) {
    this.#sleep = sleep;
    this.#now = now;
  }

  /** The state last told by the service (undefined before any answer with a RateLimit field). */
  get state(): RateLimitState | undefined {
    return this.#state === undefined ? undefined : { ...this.#state };
  }

  /** Reads the RateLimit fields of an answer; an answer without them changes nothing. */
  observe(headers: Headers): void {
    const field = headers.get('ratelimit');
    if (field === null) return;
    const remaining = parameter(field, 'r');
    const resetSeconds = parameter(field, 't');
    if (remaining === undefined || resetSeconds === undefined) return;
    const policy = headers.get('ratelimit-policy');
    const quota = policy === null ? undefined : parameter(policy, 'q');
    this.#state = { remaining, resetAtMs: this.#now() + resetSeconds * 1000, quota };
  }

  /**
   * Waits, when what is left of the window cannot pay `cost` requests, until the window resets; then
   * counts the cost as spent (the next answer tells the service's own count). A cost over the whole
   * allowance waits for a fresh window and is sent then (the service refuses it; the caller splits).
   */
  async pace(cost: number): Promise<void> {
    const state = this.#state;
    if (state === undefined) return;
    const now = this.#now();
    if (now >= state.resetAtMs) {
      state.remaining = state.quota ?? Math.max(state.remaining, cost);
      state.resetAtMs = Infinity;
    }
    if (state.remaining < cost && state.resetAtMs !== Infinity) {
      // A quarter of a second more: the service rounds the reset up to whole seconds, never down.
      const waitMs = state.resetAtMs - now + 250;
      this.onWait?.(waitMs);
      await this.#sleep(waitMs);
      state.remaining = state.quota ?? cost;
      state.resetAtMs = Infinity;
    }
    state.remaining -= cost;
  }
}
