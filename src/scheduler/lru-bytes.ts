/**
 * A least-recently-used map bounded by bytes, not entries: the store behind
 * the response cache (response-cache.ts). Pure and synchronous; a Map keeps
 * insertion order, so re-inserting on use makes its first key the LRU one.
 */
export interface LruStats {
  entries: number;
  bytes: number;
  capacity: number;
  evictions: number;
}

export class LruBytes<V> {
  private readonly map = new Map<string, { value: V; bytes: number }>();
  private used = 0;
  private evicted = 0;

  constructor(readonly capacity: number) {
    if (!Number.isFinite(capacity) || capacity < 0) throw new RangeError(`LRU capacity must be a byte count >= 0, got ${capacity}`);
  }

  /** The value for key, made most recently used; undefined on a miss. */
  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  has(key: string): boolean {
    return this.map.has(key);
  }

  /**
   * Insert (or replace) key, evicting least recently used entries until it
   * fits. An entry larger than the whole capacity is not stored: returns false.
   */
  set(key: string, value: V, bytes: number): boolean {
    if (!(bytes >= 0)) throw new RangeError(`LRU entry size must be >= 0, got ${bytes}`);
    this.delete(key);
    if (bytes > this.capacity) return false;
    while (this.used + bytes > this.capacity) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) break;
      this.delete(oldest.value);
      this.evicted++;
    }
    this.map.set(key, { value, bytes });
    this.used += bytes;
    return true;
  }

  delete(key: string): boolean {
    const e = this.map.get(key);
    if (e === undefined) return false;
    this.map.delete(key);
    this.used -= e.bytes;
    return true;
  }

  /** Keys from least to most recently used. */
  keys(): string[] {
    return [...this.map.keys()];
  }

  stats(): LruStats {
    return { entries: this.map.size, bytes: this.used, capacity: this.capacity, evictions: this.evicted };
  }
}
