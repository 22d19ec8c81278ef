/** Thrown by `SerialGate.run` when as many callers as it may hold are already waiting. */
export class GateFullError extends Error {
  constructor() {
    super('too many callers are waiting');
    this.name = 'GateFullError';
  }
}

/**
 * Runs one task at a time, the others waiting in arrival order, and refuses a caller outright when
 * `maxWaiting` are already waiting. For work that yields between small steps: with one task at a time,
 * each turn of the event loop runs at most one step, however many callers there are.
 */
export class SerialGate {
  readonly #maxWaiting: number;
  readonly #waiting: (() => void)[] = [];
  #isBusy = false;

  constructor(maxWaiting: number) {
    this.#maxWaiting = maxWaiting;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#isBusy) {
      if (this.#waiting.length >= this.#maxWaiting) throw new GateFullError();
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#isBusy = true;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next === undefined) this.#isBusy = false;
      else next(); // the gate passes straight to the next caller: it stays busy
    }
  }

  /** Callers waiting now (not counting the one running). */
  get waiting(): number {
    return this.#waiting.length;
  }
}
