// The embedded backend's cache: bounded by entry count and by bytes (least recently used goes
// first), one entry above its own bound never stored, and a per-entry time to live. A Map iterates
// in insertion order, so re-inserting on use keeps the least recently used entry first.
import { type CacheBounds, entryBytes } from './cache-bounds.ts';

interface Entry {
  value: string;
  expiresAt: number;
  bytes: number;
}

export class TtlLruCache {
  private readonly entries = new Map<string, Entry>();
  private totalBytes = 0;

  constructor(private readonly bounds: CacheBounds, private readonly now: () => number) {}

  get(key: string): string | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= this.now()) {
      this.totalBytes -= entry.bytes;
      return undefined;
    }
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores the entry unless it is above a bound by itself; then drops the least recently used past the bounds. */
  set(key: string, value: string, ttlMs: number): void {
    const { maxEntries, maxBytes = Infinity, maxEntryBytes = Infinity } = this.bounds;
    const bytes = entryBytes(key, value);
    if (maxEntries <= 0 || bytes > maxEntryBytes || bytes > maxBytes) return;
    this.delete(key);
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs, bytes });
    this.totalBytes += bytes;
    while (this.entries.size > maxEntries || this.totalBytes > maxBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The bytes of the entries held (expired ones count until they are read or pushed out). */
  get bytes(): number {
    return this.totalBytes;
  }
}
