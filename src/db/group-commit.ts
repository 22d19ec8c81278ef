/**
 * Group commit: callers submit one item each; items that arrive while a flush is running are written
 * together by the next flush, in one transaction, and each caller is answered only after that commit.
 * A synced commit costs the same for one row as for a hundred, so this keeps full durability at a
 * fraction of the cost per proof.
 */
export class GroupCommitter<T, R> {
  readonly #flush: (items: T[]) => Promise<R[]>;
  readonly #maxBatch: number;
  #queue: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  #running = false;

  /** `flush` must return one result per item, in order, or throw to fail the whole batch. */
  constructor(flush: (items: T[]) => Promise<R[]>, maxBatch = 512) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#running) {
        this.#running = true;
        // Let every request already parsed in this turn of the event loop join the first batch.
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#maxBatch);
      try {
        const results = await this.#flush(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i] as R));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.#running = false;
  }

  /** Resolves once everything submitted so far has been written or has failed. */
  async idle(): Promise<void> {
    while (this.#running) await new Promise((resolve) => setImmediate(resolve));
  }
}
