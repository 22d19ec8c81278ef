import { GateFullError, SerialGate } from '../core/serial-gate.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import * as store from './proofs-store.ts';
import type { ProofFilter } from './proofs-store.ts';

/**
 * Searches that may look at every proof: the first window's size in sequence numbers (and the smallest
 * it shrinks to), the time a page may spend in the database before it is answered with what it found,
 * and how many searches may wait for the one running before more are refused with 503. Rows compared one
 * by one cost about 0.2 µs each when SQLite's pages are in memory and up to 9 µs when they are not
 * (4,096 of them took 36 ms): the first window is small and grows while windows stay cheap.
 */
const SEARCH_DEFAULTS = { windowRows: 256, budgetMs: 25, maxWaiting: 64 };
export type SearchBounds = typeof SEARCH_DEFAULTS;
/** A window is sized to take about this long: the longest the event loop waits for one. */
const WINDOW_TARGET_MS = 2;
const MAX_WINDOW_ROWS = 1 << 20;

interface SearchResult {
  /** Up to `limit + 1` matches, newest first. */
  found: { seq: number; id: string }[];
  /**
   * The sequence number below which nothing was looked at yet when the budget ran out; undefined when
   * the search reached the first proof or filled the page.
   */
  stoppedAt: number | undefined;
}

/**
 * Runs the searches that no index answers in order (docs/security.md): through windows of sequence
 * numbers, newest first, one search at a time in this process with the event loop free between
 * windows, each window sized to take about WINDOW_TARGET_MS, and at most `budgetMs` of them a page.
 */
export class WindowedSearch {
  readonly #db: Db;
  readonly #engine: 'sqlite' | 'postgres';
  readonly #bounds: SearchBounds;
  readonly #gate: SerialGate;

  constructor(db: Db, engine: 'sqlite' | 'postgres', bounds: Partial<SearchBounds> = {}) {
    this.#db = db;
    this.#engine = engine;
    this.#bounds = { ...SEARCH_DEFAULTS, ...bounds };
    this.#gate = new SerialGate(this.#bounds.maxWaiting);
  }

  async run(
    filter: Omit<ProofFilter, 'beforeSeq' | 'atLeastSeq'>,
    limit: number,
    beforeSeq: number | undefined,
  ): Promise<SearchResult> {
    try {
      return await this.#gate.run(() => this.#windows(filter, limit, beforeSeq));
    } catch (error) {
      if (!(error instanceof GateFullError)) throw error;
      throw new AppError(
        'service_unavailable',
        'Too many searches are waiting; retry in a moment',
        { waitingSearches: this.#bounds.maxWaiting },
        { 'Retry-After': '1' },
      );
    }
  }

  async #windows(
    filter: Omit<ProofFilter, 'beforeSeq' | 'atLeastSeq'>,
    limit: number,
    beforeSeq: number | undefined,
  ): Promise<SearchResult> {
    const { windowRows, budgetMs } = this.#bounds;
    // A cursor beyond the newest proof (forged) starts at the newest, not windows above it.
    let top = Math.min(beforeSeq ?? Infinity, (await store.newestSeq(this.#db)) + 1);
    let window = windowRows;
    let spentMs = 0;
    const found: { seq: number; id: string }[] = [];
    while (top > 1 && found.length <= limit) {
      const atLeastSeq = Math.max(1, top - window);
      const started = performance.now();
      const rows = await store.listProofs(
        this.#db,
        this.#engine,
        { ...filter, beforeSeq: top, atLeastSeq },
        limit - found.length,
      );
      const tookMs = performance.now() - started;
      found.push(...rows);
      top = atLeastSeq;
      spentMs += tookMs;
      if (spentMs >= budgetMs && top > 1 && found.length <= limit) return { found, stoppedAt: top };
      // Cheap windows grow (an index answers them), costly ones shrink (rows compared one by one).
      if (tookMs < WINDOW_TARGET_MS / 2) window = Math.min(window * 2, MAX_WINDOW_ROWS);
      else if (tookMs > WINDOW_TARGET_MS) window = Math.max(Math.floor(window / 2), windowRows);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { found, stoppedAt: undefined };
  }
}

/** A page's cursor: where the next page starts, opaque to clients. */
export function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = /^s(\d{1,15})$/.exec(text)?.[1];
  if (seq === undefined) {
    throw new AppError('invalid_request', 'Invalid request: cursor is not one this service issued', {
      errors: [
        { location: 'querystring', path: '/cursor', message: 'is not a valid cursor', keyword: 'cursor' },
      ],
    });
  }
  return Number(seq);
}
