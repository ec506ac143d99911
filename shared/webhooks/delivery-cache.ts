/**
 * A bounded in-memory cache whose entries are answered for `ttlMs` after they were loaded,
 * for the reads every queued delivery repeats (its workspace record, its signing key). The
 * loading promise itself is kept, so the deliveries of one batch that arrive together share
 * one read; a failed load is forgotten at once, never answered again. The oldest entry goes
 * when the cache is full (a Map iterates in insertion order).
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: Promise<V>; until: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  get(key: string, load: () => Promise<V>, nowMs: number): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.until > nowMs) return hit.value;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    const value = load();
    this.entries.set(key, { value, until: nowMs + this.ttlMs });
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    return value;
  }

  /** Answers `value` for the key from now on, as if just loaded (a change this process made itself). */
  set(key: string, value: V, nowMs: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value: Promise.resolve(value), until: nowMs + this.ttlMs });
  }
}
