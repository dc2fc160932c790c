// The embedded backend's cache: bounded by entry count (least recently used goes first) and by a
// per-entry time to live. A Map iterates in insertion order, so re-inserting on use keeps the
// least recently used entry first.

interface Entry {
  value: string;
  expiresAt: number;
}

export class TtlLruCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries: number, private readonly now: () => number) {}

  get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.now()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: string, ttlMs: number): void {
    this.entries.delete(key);
    if (this.maxEntries <= 0) return;
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
