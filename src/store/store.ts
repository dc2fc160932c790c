/**
 * The shared state of the account layer: API keys, credit balances, rate counters and cache
 * entries. Two backends: an embedded one for a single machine (the default: keys, balances and
 * limits in a JSON file that the CLI and the server share under a lock; counters and cache in
 * memory) and Redis (`REDIS_URL`) for several instances. Every check-and-update that must be exact
 * across instances is ONE atomic operation of the backend, never a read followed by a write.
 */
export interface Store {
  readonly description: string;

  // --- keys -----------------------------------------------------------------------------------
  /** Adds a key (its hash is unique). */
  createKey(record: KeyRecord): Promise<void>;
  /** The key whose SHA-256 hex is `hash`, revoked or not; undefined when there is none. */
  keyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(): Promise<KeyRecord[]>;
  /** False when no live key has that id. */
  revokeKey(id: string, at: string): Promise<boolean>;
  /** Sets (a number) or clears (null) the per-minute limits given; false when no key has that id. */
  setKeyLimits(id: string, limits: Partial<Pick<KeyRecord, 'rpm' | 'tpm'>>): Promise<boolean>;

  // --- credits (whole credits; a key without a balance is unlimited) -----------------------------
  /** Sets the balance (null: unlimited); false when no key has that id. */
  setCredits(id: string, credits: number | null): Promise<boolean>;
  /** Adds `amount` (may be negative) to a limited balance and returns it; undefined when unlimited or unknown. */
  addCredits(id: string, amount: number): Promise<number | undefined>;
  /** The balance; null when unlimited, undefined when no key has that id. */
  credits(id: string): Promise<number | null | undefined>;
  /**
   * Atomically: when the balance covers `amount`, takes it and answers `{ ok: true }`; otherwise
   * takes nothing and answers the balance. An unlimited key always succeeds and takes nothing.
   */
  reserveCredits(id: string, amount: number): Promise<{ ok: true } | { ok: false; balance: number }>;

  // --- rate limits ---------------------------------------------------------------------------------
  /**
   * GCRA over a window of one minute for `limitPerMinute` units (requests or tokens) under
   * `counter` (e.g. `rpm:key_ab12`): atomically admits `cost` units, or refuses and says when
   * they would fit. `nowMs` is the caller's clock (tests pass a fake one; instances must share a
   * clock within a few ms).
   */
  rateLimit(counter: string, limitPerMinute: number, cost: number, nowMs: number): Promise<RateDecision>;
  /**
   * Counts `cost` units already spent (the tokens an answer generated) under the same GCRA, never
   * refusing: past the limit, the counter's later requests wait longer.
   */
  chargeRate(counter: string, limitPerMinute: number, cost: number, nowMs: number): Promise<void>;

  // --- verified cache ------------------------------------------------------------------------------
  cacheGet(key: string): Promise<string | undefined>;
  /**
   * Stores for `ttlSeconds`, unless the entry (key and value, UTF-8) is above the per-entry bound:
   * then nothing is stored and nothing fails. The embedded backend also drops the least recently
   * used past its bounds in entries and bytes.
   */
  cacheSet(key: string, value: string, ttlSeconds: number): Promise<void>;

  // --- semantic cache (CACHE_MODE=semantic) ------------------------------------------------------
  /** The entries stored under a semantic key (src/chat/cache-key.ts), in the order added. */
  semanticEntries(semanticKey: string): Promise<SemanticEntry[]>;
  /**
   * Adds an entry unless the key holds `maxEntries` already (then nothing, the scan stays
   * bounded); the key's entries live `ttlSeconds` from this add. One atomic operation.
   */
  semanticAdd(semanticKey: string, entry: SemanticEntry, maxEntries: number, ttlSeconds: number): Promise<void>;
  /** Appends one observation to a list atomically, keeping its last `maxKept`; the list lives `ttlSeconds` from now. */
  observe(list: string, observation: Observation, maxKept: number, ttlSeconds: number): Promise<void>;
  /** Each list's observations, oldest first (an unknown list has none). */
  observations(lists: string[]): Promise<Observation[][]>;

  /** Rejects when the backend cannot be reached (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface KeyRecord {
  id: string;
  name: string;
  /** SHA-256 of the key, hex; the key itself is never stored. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
  /** Requests per minute; null: no limit of its own (the service-wide default applies). */
  rpm: number | null;
  /** Tokens per minute; null likewise. */
  tpm: number | null;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** Units still admissible right now, after this decision. */
  remaining: number;
  /** Milliseconds until the counter is back to its full allowance. */
  resetMs: number;
  /** When refused: milliseconds until `cost` units would be admitted. 0 when allowed. */
  retryAfterMs: number;
}

/** A prompt the semantic cache can answer near: its embedding and the exact-cache key of its answer. */
export interface SemanticEntry {
  id: string;
  /** The embedding, Float32 little-endian, base64. */
  vector: string;
  answerKey: string;
  /** The prompt's words as short hashes (candidate-filter.ts), for the one-word-apart rule. */
  words?: string[];
  /** The last turn's text, which the budget judge's cross-encoder reads (CACHE_JUDGE=budget only). */
  text?: string;
}

/** One verification: at similarity `s`, the cached answer was (`ok`) or was not the fresh one. */
export interface Observation {
  s: number;
  ok: boolean;
  /** In a scope's pool: the entry compared, so its own estimate counts it once. */
  entry?: string;
}
