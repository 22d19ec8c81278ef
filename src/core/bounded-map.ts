/**
 * A Map that keeps at most `capacity` entries: setting a new key when full drops the oldest one
 * (insertion order). For caches whose entries never go stale, only too many.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly #capacity: number;

  constructor(capacity: number) {
    super();
    this.#capacity = capacity;
  }

  override set(key: K, value: V): this {
    if (this.size >= this.#capacity && !this.has(key)) {
      const oldest = this.keys().next();
      if (oldest.done !== true) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}
