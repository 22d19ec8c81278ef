/**
 * Group commit: callers submit one item each; items that arrive while a flush is running are written
 * together by the next flush, in one transaction, and each caller is answered only after that commit.
 * A synced commit costs the same for one row as for a hundred, so this keeps full durability at a
 * fraction of the cost per proof.
 */
export class GroupCommitter<T, R> {
  readonly #flush: (items: T[]) => Promise<R[]>;
  readonly #maxBatch: number;
  /** Groups waiting for a flush; a group is never split between two flushes. */
  #queue: { items: T[]; resolve: (results: R[]) => void; reject: (error: unknown) => void }[] = [];
  #running = false;

  /**
   * `flush` must return one result per item, in order, or throw to fail the whole batch. A flush takes
   * groups up to `maxBatch` items, or one larger group alone.
   */
  constructor(flush: (items: T[]) => Promise<R[]>, maxBatch = 512) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
  }

  async submit(item: T): Promise<R> {
    const [result] = await this.submitAll([item]);
    return result as R;
  }

  /** Submits items that are committed together, in one transaction (a batch of proofs). */
  submitAll(items: T[]): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      this.#queue.push({ items, resolve, reject });
      if (!this.#running) {
        this.#running = true;
        // Let every request already parsed in this turn of the event loop join the first batch.
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      let count = 0;
      let taken = 0;
      for (const group of this.#queue) {
        if (taken > 0 && count + group.items.length > this.#maxBatch) break;
        count += group.items.length;
        taken++;
      }
      const batch = this.#queue.splice(0, taken);
      try {
        const results = await this.#flush(batch.flatMap((group) => group.items));
        let at = 0;
        for (const group of batch) {
          group.resolve(results.slice(at, at + group.items.length));
          at += group.items.length;
        }
      } catch (error) {
        for (const group of batch) group.reject(error);
      }
    }
    this.#running = false;
  }

  /** Resolves once everything submitted so far has been written or has failed. */
  async idle(): Promise<void> {
    while (this.#running) await new Promise((resolve) => setImmediate(resolve));
  }
}
