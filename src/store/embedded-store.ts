// The single-machine backend, nothing to install: keys, balances and per-key limits in the keys
// file and its balance journal (shared with the CLI through SharedKeysFile), rate counters and
// cache entries in this process's memory (a restart forgets them, which only ever errs towards
// admitting).
import { stat } from 'node:fs/promises';
import { checkAmount, checkCredits, checkLimit, checkRate, checkRecord, checkTtl } from './arguments.ts';
import { DuplicateKeyError } from './errors.ts';
import type { FileLockOptions } from './file-lock.ts';
import { toRecord, type KeyEntry } from './keys-file.ts';
import { TtlLruCache } from './lru-cache.ts';
import { RateCounters } from './rate-counters.ts';
import { SharedKeysFile } from './shared-keys-file.ts';
import type { Observation, SemanticEntry, Store } from './store.ts';
import type { Logger } from '../logging.ts';

type Reservation = Awaited<ReturnType<Store['reserveCredits']>>;

export interface EmbeddedStoreOptions {
  /** The keys file (config.keysFile), the one the key store and the CLI use. */
  file: string;
  /** The cache's bound in entries; 0 caches nothing. */
  cacheMaxEntries: number;
  /** The cache's bound in bytes over all entries (`CACHE_MAX_BYTES`); unset: entries only. */
  cacheMaxBytes?: number;
  /** No entry of more bytes is stored (`CACHE_MAX_ENTRY_BYTES`); unset: no such bound. */
  cacheMaxEntryBytes?: number;
  /** Where a keys file that cannot be read as keys, or a broken lock, is reported. */
  log?: Pick<Logger, 'warn'>;
  /** The cache's clock (tests pass a fake one); rate limits take the caller's clock per call. */
  now?: () => number;
  lock?: Omit<FileLockOptions, 'log'>;
  /** Past this many bytes the balance journal is folded into the keys file (tests fold often). */
  journalFoldBytes?: number;
}

export function createEmbeddedStore(options: EmbeddedStoreOptions): Store {
  const { file, cacheMaxEntries, cacheMaxBytes, cacheMaxEntryBytes, log = console, now = Date.now } = options;
  const keys = new SharedKeysFile(file, log, options.lock, options.journalFoldBytes);
  const counters = new RateCounters();
  const cache = new TtlLruCache({ maxEntries: cacheMaxEntries, maxBytes: cacheMaxBytes, maxEntryBytes: cacheMaxEntryBytes }, now);
  // The semantic layer's state, bounded like the answers but not by CACHE_MAX_ENTRY_BYTES: its
  // values are bounded by their own counts (entries per key, observations kept), and one past the
  // per-answer bound would be dropped whole, forgetting everything learned under it.
  const semantic = new TtlLruCache({ maxEntries: cacheMaxEntries, maxBytes: cacheMaxBytes }, now);
  const byId = (entries: readonly KeyEntry[], id: string) => entries.find((e) => e.id === id);

  return {
    description: `embedded (keys in ${file}; rate counters and cache in memory)`,

    async createKey(record) {
      checkRecord(record);
      await keys.update((entries) => {
        if (byId(entries, record.id)) throw new DuplicateKeyError(`a key with the id ${record.id} exists`);
        if (entries.some((e) => e.hash === record.hash)) throw new DuplicateKeyError('a key with that hash exists');
        entries.push({ ...toRecord(record), credits: null });
        return { write: true, result: undefined };
      });
    },

    async keyByHash(hash) {
      const entry = keys.current().find((e) => e.hash === hash);
      return entry && toRecord(entry);
    },

    async listKeys() {
      return keys.current().map(toRecord);
    },

    revokeKey(id, at) {
      return keys.update((entries) => {
        const entry = byId(entries, id);
        if (!entry || entry.revokedAt !== null) return { write: false, result: false };
        entry.revokedAt = at;
        return { write: true, result: true };
      });
    },

    async setKeyLimits(id, limits) {
      const given = (['rpm', 'tpm'] as const).filter((field) => limits[field] !== undefined);
      for (const field of given) checkLimit(limits[field], field);
      return keys.update((entries) => {
        const entry = byId(entries, id);
        if (!entry) return { write: false, result: false };
        for (const field of given) entry[field] = limits[field] ?? null;
        return { write: given.length > 0, result: true };
      });
    },

    async setCredits(id, credits) {
      if (credits !== null) checkCredits(credits, 'credits');
      return keys.update((entries) => {
        const entry = byId(entries, id);
        if (!entry) return { write: false, result: false };
        entry.credits = credits;
        return { write: true, result: true };
      });
    },

    async addCredits(id, amount) {
      checkCredits(amount, 'amount');
      // A journaled change (a settlement, a top-up): one line, not a rewrite of the keys file.
      return keys.adjust(id, (entry) => {
        if (!entry || entry.credits === null) return { delta: 0, result: undefined };
        const balance = entry.credits + amount;
        checkCredits(balance, 'the resulting balance');
        return { delta: amount, result: balance };
      });
    },

    async credits(id) {
      return byId(keys.current(), id)?.credits;
    },

    async reserveCredits(id, amount) {
      checkAmount(amount, 'amount');
      // Unlimited keys take nothing, so they need no lock and no write: the common case stays a
      // memory read, and keeps working while the file is being fixed by hand.
      if (byId(keys.current(), id)?.credits === null) return { ok: true };
      return keys.adjust<Reservation>(id, (entry) => {
        // No such key has nothing to spend (the interface has no third answer).
        if (!entry) return { delta: 0, result: { ok: false, balance: 0 } };
        if (entry.credits === null) return { delta: 0, result: { ok: true } };
        if (entry.credits < amount) return { delta: 0, result: { ok: false, balance: entry.credits } };
        return { delta: -amount, result: { ok: true } };
      });
    },

    async rateLimit(counter, limitPerMinute, cost, nowMs) {
      checkRate(limitPerMinute, cost, nowMs);
      return counters.take(counter, limitPerMinute, cost, nowMs);
    },

    async chargeRate(counter, limitPerMinute, cost, nowMs) {
      checkRate(limitPerMinute, cost, nowMs);
      counters.charge(counter, limitPerMinute, cost, nowMs);
    },

    async cacheGet(key) {
      return cache.get(key);
    },

    async cacheSet(key, value, ttlSeconds) {
      checkTtl(ttlSeconds);
      cache.set(key, value, ttlSeconds * 1000);
    },

    // The semantic entries and observation lists are JSON values: one process reads and writes
    // each synchronously, so an update is atomic here.
    async semanticEntries(semanticKey) {
      return parsed<SemanticEntry[]>(semantic.get(`sem:${semanticKey}`), []);
    },

    async semanticAdd(semanticKey, entry, maxEntries, ttlSeconds) {
      checkTtl(ttlSeconds);
      const entries = parsed<SemanticEntry[]>(semantic.get(`sem:${semanticKey}`), []);
      if (entries.length >= maxEntries) return;
      semantic.set(`sem:${semanticKey}`, JSON.stringify([...entries, entry]), ttlSeconds * 1000);
    },

    async observe(list, observation, maxKept, ttlSeconds) {
      checkTtl(ttlSeconds);
      const kept = parsed<Observation[]>(semantic.get(`obs:${list}`), []);
      semantic.set(`obs:${list}`, JSON.stringify([...kept, observation].slice(-maxKept)), ttlSeconds * 1000);
    },

    async observations(lists) {
      return lists.map((list) => parsed<Observation[]>(semantic.get(`obs:${list}`), []));
    },

    async ping() {
      // Readiness: the file can be reached (a missing one is fine: no keys yet).
      await stat(file).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },

    async close() {},
  } satisfies Store;
}


const parsed = <T>(value: string | undefined, none: T): T => (value === undefined ? none : (JSON.parse(value) as T));
