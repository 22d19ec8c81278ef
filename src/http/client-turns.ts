/**
 * How many requests of one client (an API key, else an address) are handled at once; the others wait,
 * in order, and each starts in a later turn of the event loop than the one that freed its place. A
 * client that sends a burst of costly requests then takes at most this many handlers' worth of each
 * turn, and every other client's requests are read and answered between its turns. With the embedded
 * database a request runs to its end in one turn, so without this a burst of 60 ran back to back while
 * everyone else waited (docs/security.md).
 */
export class ClientTurns {
  readonly #maxPerClient: number;
  /** Requests being handled per client, and the starts waiting behind them. */
  readonly #clients = new Map<string, { running: number; waiting: (() => void)[] }>();

  constructor(maxPerClient: number) {
    this.#maxPerClient = maxPerClient;
  }

  /** Resolves when the client's request may be handled; call `leave` exactly once after that. */
  enter(client: string): Promise<void> | undefined {
    let state = this.#clients.get(client);
    if (state === undefined) {
      state = { running: 0, waiting: [] };
      this.#clients.set(client, state);
    }
    if (state.running < this.#maxPerClient) {
      state.running++;
      return undefined;
    }
    const queued = state;
    return new Promise<void>((resolve) => queued.waiting.push(resolve));
  }

  /** The request has been answered (or its connection closed): its place goes to the next one. */
  leave(client: string): void {
    const state = this.#clients.get(client);
    if (state === undefined) return;
    const next = state.waiting.shift();
    if (next !== undefined) {
      // The place passes on without being freed, in a later turn: other clients' I/O comes first.
      setImmediate(next);
      return;
    }
    state.running--;
    if (state.running === 0) this.#clients.delete(client);
  }

  /** Clients with a request in hand or waiting (none once every request is answered). */
  get activeClients(): number {
    return this.#clients.size;
  }
}
