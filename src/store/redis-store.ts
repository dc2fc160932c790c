// The backend for several instances: everything in one Redis, every check-and-update a Lua script.
//
// Layout, under `keyPrefix`: `key:<id>` a HASH (id, name, hash, createdAt, and when not null
// revokedAt, rpm, tpm, credits), `keyhash:<sha256>` -> id, `keys` the SET of ids, `rate:<counter>`
// a GCRA TAT, `cache:<key>` a cache entry with its TTL. The scripts touch several of these keys
// at once, so the store wants one Redis, not a Cluster.
//
// When Redis cannot be reached, every operation (ping included) rejects with a
// StoreUnavailableError whose `cause` is ioredis's error; none waits for Redis to come back:
// - refused or down: rejected at once between connection attempts; a call made while an attempt
//   is under way (at start, say) is rejected when it fails (ms when refused, CONNECT_TIMEOUT_MS
//   when nothing answers);
// - connected but not answering: rejected after COMMAND_TIMEOUT_MS;
// - connection lost with the command sent: rejected at once, the command not resent; a mutation
//   may or may not have been applied (resending could take credits twice).
// Replies that mean Redis cannot serve now (BUSY, LOADING, ...) are outages too; any other error
// reply (a script bug, a key of the wrong type) is rethrown as it is. The client reconnects in
// the background, so calls succeed again once Redis is back.
import { Redis, ReplyError } from 'ioredis';
import { checkAmount, checkCredits, checkLimit, checkRate, checkRecord, checkTtl } from './arguments.ts';
import { entryBytes } from './cache-bounds.ts';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import { DuplicateKeyError } from './errors.ts';
import { defineScripts } from './redis-scripts.ts';
import type { KeyRecord, RateDecision, SemanticEntry, Store } from './store.ts';
import type { Logger } from '../logging.ts';

export interface RedisStoreOptions {
  /** redis://[user:password@]host:port[/db] or rediss:// */
  url: string;
  /** Prepended to every key, so several services (or test runs) can share one Redis. */
  keyPrefix?: string;
  /** Where an outage is reported (once per outage, not once per failed call). */
  log?: Pick<Logger, 'warn'>;
  /**
   * No cache entry of more bytes is stored (`CACHE_MAX_ENTRY_BYTES`); unset: no such bound. The
   * total is Redis's own to bound: `maxmemory` with `volatile-lru` (cache entries are the only keys with a TTL).
   */
  cacheMaxEntryBytes?: number;
}

const CONNECT_TIMEOUT_MS = 2_000;
const MAX_RETRY_DELAY_MS = 500;
/** Longer than a command can wait for a connection attempt (CONNECT_TIMEOUT_MS), so it times out only once sent. */
const COMMAND_TIMEOUT_MS = 5_000;
/** ioredis's states between a failed connection attempt and the next one (or after close()). */
const DOWN = new Set(['close', 'reconnecting', 'end']);
/** Replies that mean "not now" (busy script, loading data, no primary), not a bug in the call. */
const UNAVAILABLE_REPLY = /^(BUSY|LOADING|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;

export function createRedisStore(options: RedisStoreOptions): Store {
  const { url, keyPrefix = 'chat-service:', log = console, cacheMaxEntryBytes = Infinity } = options;
  const where = redacted(url);
  const client = defineScripts(new Redis(url, {
    // Commands wait for the connection under way (so the first calls after start are not
    // refused), but each failed attempt fails them (maxRetriesPerRequest 0) instead of queueing
    // them until Redis returns.
    enableOfflineQueue: true,
    maxRetriesPerRequest: 0,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RETRY_DELAY_MS),
    autoResendUnfulfilledCommands: false,
  }));
  let outage = false;
  client.on('error', (err: Error) => {
    if (outage) return;
    outage = true;
    log.warn(`Redis at ${where} cannot be reached (${err.message}); store operations fail until it can.`);
  });
  client.on('ready', () => {
    if (outage) log.warn(`Redis at ${where} is reachable again.`);
    outage = false;
  });

  const k = {
    key: (id: string) => `${keyPrefix}key:${id}`,
    hash: (hash: string) => `${keyPrefix}keyhash:${hash}`,
    ids: `${keyPrefix}keys`,
    rate: (counter: string) => `${keyPrefix}rate:${counter}`,
    cache: (key: string) => `${keyPrefix}cache:${key}`,
    semantic: (key: string) => `${keyPrefix}sem:${key}`,
    observations: (list: string) => `${keyPrefix}obs:${list}`,
  };

  /** Every call goes through here, so an outage always surfaces as the same error type. */
  async function call<T>(operation: () => Promise<T>): Promise<T> {
    // Between failed attempts there is no connection to wait for: answer now, not at the next attempt.
    if (DOWN.has(client.status)) {
      throw new StoreUnavailableError(`Redis at ${where} cannot be reached (connection ${client.status})`);
    }
    try {
      return await operation();
    } catch (err) {
      const busy = err instanceof ReplyError && UNAVAILABLE_REPLY.test((err as Error).message);
      if (!busy && (err instanceof ReplyError || err instanceof RangeError || err instanceof DuplicateKeyError)) throw err;
      throw new StoreUnavailableError(`Redis at ${where}: ${(err as Error).message}`, 'store_unavailable', { cause: err });
    }
  }

  const recordOf = async (id: string) => toRecord(await client.hgetall(k.key(id)));
  const optional = (n: number | null) => (n === null ? '' : String(n));

  return {
    description: `redis (${where}, prefix ${keyPrefix})`,

    createKey: (record) => call(async () => {
      checkRecord(record);
      const outcome = await client.storeCreateKey(k.key(record.id), k.hash(record.hash), k.ids,
        record.id, record.name, record.hash, record.createdAt, record.revokedAt ?? '', optional(record.rpm), optional(record.tpm));
      if (outcome === 'id') throw new DuplicateKeyError(`a key with the id ${record.id} exists`);
      if (outcome === 'hash') throw new DuplicateKeyError('a key with that hash exists');
    }),

    keyByHash: (hash) => call(async () => {
      const id = await client.get(k.hash(hash));
      return id === null ? undefined : recordOf(id);
    }),

    listKeys: () => call(async () => {
      const ids = await client.smembers(k.ids);
      const pipeline = client.pipeline();
      for (const id of ids) pipeline.hgetall(k.key(id));
      const replies = (await pipeline.exec()) ?? [];
      const records = replies.map(([err, fields]) => {
        if (err) throw err;
        return toRecord(fields as Record<string, string>);
      }).filter((r): r is KeyRecord => r !== undefined);
      // Creation order, as the embedded backend's file keeps them; a SET has none of its own.
      return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    }),

    revokeKey: (id, at) => call(async () => (await client.storeRevokeKey(k.key(id), at)) === 1),

    setKeyLimits: (id, limits) => call(async () => {
      const pairs: string[] = [];
      for (const field of ['rpm', 'tpm'] as const) {
        const value = limits[field];
        if (value === undefined) continue;
        checkLimit(value, field);
        pairs.push(field, optional(value));
      }
      return (await client.storeSetFields(k.key(id), ...pairs)) === 1;
    }),

    setCredits: (id, credits) => call(async () => {
      if (credits !== null) checkCredits(credits, 'credits');
      return (await client.storeSetFields(k.key(id), 'credits', optional(credits))) === 1;
    }),

    addCredits: (id, amount) => call(async () => {
      checkCredits(amount, 'amount');
      return (await client.storeAddCredits(k.key(id), String(amount))) ?? undefined;
    }),

    credits: (id) => call(async () => {
      const [exists, balance] = await Promise.all([client.exists(k.key(id)), client.hget(k.key(id), 'credits')]);
      if (balance !== null) return Number(balance);
      return exists ? null : undefined;
    }),

    reserveCredits: (id, amount) => call(async () => {
      checkAmount(amount, 'amount');
      const [ok, balance] = await client.storeReserveCredits(k.key(id), String(amount));
      return ok === 1 ? { ok: true } : { ok: false, balance };
    }),

    rateLimit: (counter, limitPerMinute, cost, nowMs) => call(async (): Promise<RateDecision> => {
      checkRate(limitPerMinute, cost, nowMs);
      const [allowed, remaining, resetMs, retry] = await client.storeRateLimit(
        k.rate(counter), String(limitPerMinute), String(cost), String(nowMs));
      const retryAfterMs = retry === -1 ? Number.POSITIVE_INFINITY : retry;
      return { allowed: allowed === 1, limit: limitPerMinute, remaining, resetMs, retryAfterMs };
    }),

    chargeRate: (counter, limitPerMinute, cost, nowMs) => call(async () => {
      checkRate(limitPerMinute, cost, nowMs);
      await client.storeChargeRate(k.rate(counter), String(limitPerMinute), String(cost), String(nowMs));
    }),

    cacheGet: (key) => call(async () => (await client.get(k.cache(key))) ?? undefined),

    // No vector search in the Redis this targets (Debian's redis-server 7.0 has no search module):
    // a semantic key's entries are one hash, read whole and scanned by the caller (bounded by
    // maxEntries); observations are lists appended by one MULTI, so instances share what is learned.
    semanticEntries: (semanticKey) => call(async () =>
      Object.values(await client.hgetall(k.semantic(semanticKey))).map((json) => JSON.parse(json) as SemanticEntry)),

    semanticAdd: (semanticKey, entry, maxEntries, ttlSeconds) => call(async () => {
      checkTtl(ttlSeconds);
      await client.storeSemanticAdd(k.semantic(semanticKey), entry.id, JSON.stringify(entry), String(maxEntries), String(Math.max(1, Math.round(ttlSeconds * 1000))));
    }),

    observe: (list, observation, maxKept, ttlSeconds) => call(async () => {
      checkTtl(ttlSeconds);
      const key = k.observations(list);
      await client.multi().rpush(key, `${observation.s},${observation.ok ? 1 : 0}${observation.entry ? `,${observation.entry}` : ''}`).ltrim(key, -maxKept, -1)
        .pexpire(key, Math.max(1, Math.round(ttlSeconds * 1000))).exec();
    }),

    observations: (lists) => call(async () => {
      const pipeline = client.pipeline();
      for (const list of lists) pipeline.lrange(k.observations(list), 0, -1);
      const replies = (await pipeline.exec()) ?? [];
      return replies.map(([err, items]) => {
        if (err) throw err;
        return (items as string[]).map((item) => {
          const [s, ok, entry] = item.split(',');
          return { s: Number(s), ok: ok === '1', ...(entry ? { entry } : {}) };
        });
      });
    }),

    cacheSet: (key, value, ttlSeconds) => call(async () => {
      checkTtl(ttlSeconds);
      if (entryBytes(key, value) > cacheMaxEntryBytes) return;
      await client.set(k.cache(key), value, 'PX', Math.max(1, Math.round(ttlSeconds * 1000)));
    }),

    ping: () => call(async () => {
      await client.ping();
    }),

    async close() {
      // quit() would wait in the offline queue while Redis is away; there is nothing to flush then.
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  } satisfies Store;
}

function toRecord(fields: Record<string, string>): KeyRecord | undefined {
  if (fields.id === undefined) return undefined;
  const limit = (v: string | undefined) => (v === undefined ? null : Number(v));
  return {
    id: fields.id,
    name: fields.name ?? '',
    hash: fields.hash ?? '',
    createdAt: fields.createdAt ?? '',
    revokedAt: fields.revokedAt ?? null,
    rpm: limit(fields.rpm),
    tpm: limit(fields.tpm),
  };
}

/** The URL without its password, for logs and the description. */
function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable Redis URL)';
  }
}
