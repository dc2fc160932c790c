// Picks the backend: Redis when a URL is configured (several instances share one state),
// otherwise the embedded one (one machine, nothing to install).
import { createEmbeddedStore } from './embedded-store.ts';
import { createRedisStore } from './redis-store.ts';
import type { Store } from './store.ts';
import type { Logger } from '../logging.ts';

export interface CreateStoreOptions {
  /** REDIS_URL; empty or absent selects the embedded backend. */
  redisUrl?: string;
  /** The keys file of the embedded backend. */
  keysFile: string;
  /** The embedded cache's bound in entries (Redis bounds its own memory: maxmemory). */
  cacheMaxEntries: number;
  /** `CACHE_MAX_BYTES`: the embedded cache's bound in bytes; unset: entries only. */
  cacheMaxBytes?: number;
  /** `CACHE_MAX_ENTRY_BYTES`: no entry of more bytes is stored, on either backend; unset: no such bound. */
  cacheMaxEntryBytes?: number;
  keyPrefix?: string;
  log?: Pick<Logger, 'warn'>;
}

export function createStore(options: CreateStoreOptions): Store {
  const { redisUrl, keysFile, cacheMaxEntries, cacheMaxBytes, cacheMaxEntryBytes, keyPrefix, log } = options;
  if (redisUrl) return createRedisStore({ url: redisUrl, keyPrefix, log, cacheMaxEntryBytes });
  return createEmbeddedStore({ file: keysFile, cacheMaxEntries, cacheMaxBytes, cacheMaxEntryBytes, log });
}
