// How big the cache may grow, shared by both backends so an entry is measured the same way on either.

export interface CacheBounds {
  /** Entries kept at most (embedded); 0 caches nothing. */
  maxEntries: number;
  /** `CACHE_MAX_BYTES`: bytes kept at most over all entries (embedded; Redis: its maxmemory); unset: count only. */
  maxBytes?: number;
  /** `CACHE_MAX_ENTRY_BYTES`: an entry of more bytes is never stored (both backends); unset: no such bound. */
  maxEntryBytes?: number;
}

/** What an entry costs: its key and value as UTF-8, as Redis holds them (a JS string's length counts characters). */
export const entryBytes = (key: string, value: string) => Buffer.byteLength(key) + Buffer.byteLength(value);
