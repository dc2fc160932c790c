import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyRecord, Store } from '../store/store.ts';
import type { Caller, CallerResolver } from './caller.ts';

export interface NewKeyOptions {
  /** Starting balance; null or absent: unlimited. */
  credits?: number | null;
  rpm?: number | null;
  tpm?: number | null;
}

/** The key given by `SERVICE_API_KEY`, kept in memory only: no balance, the service-wide limits. */
const ENV_CALLER: Caller = { keyId: 'env', name: 'SERVICE_API_KEY', rpm: null, tpm: null };

const hashOf = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * API keys in the store, as SHA-256 hashes only: made, listed and revoked by the CLI, looked up on
 * every request (so a revocation holds on every instance at once). Keys given at start
 * (`SERVICE_API_KEY`) live in memory only.
 */
export class ApiKeys implements CallerResolver {
  private readonly extraHashes: Buffer[];

  constructor(private readonly store: Store, extraKeys: string[] = []) {
    this.extraHashes = extraKeys.filter((k) => k !== '').map((k) => Buffer.from(hashOf(k), 'hex'));
  }

  async resolve(key: string): Promise<Caller | undefined> {
    const hash = hashOf(key);
    const presented = Buffer.from(hash, 'hex');
    if (this.extraHashes.some((h) => timingSafeEqual(h, presented))) return ENV_CALLER;
    // A lookup by the hash of the key: its timing tells nothing about the key itself.
    const record = await this.store.keyByHash(hash);
    if (!record || record.revokedAt !== null) return undefined;
    return { keyId: record.id, name: record.name, rpm: record.rpm, tpm: record.tpm };
  }

  async create(name: string, options: NewKeyOptions = {}): Promise<{ key: string; record: KeyRecord }> {
    const key = `sk-service-${randomBytes(24).toString('base64url')}`;
    const record: KeyRecord = {
      id: `key_${randomBytes(6).toString('hex')}`,
      name,
      hash: hashOf(key),
      createdAt: new Date().toISOString(),
      revokedAt: null,
      rpm: options.rpm ?? null,
      tpm: options.tpm ?? null,
    };
    await this.store.createKey(record);
    if (options.credits != null) await this.store.setCredits(record.id, options.credits);
    return { key, record };
  }

  async list(): Promise<(KeyRecord & { credits: number | null })[]> {
    const keys = await this.store.listKeys();
    return Promise.all(keys.map(async (k) => ({ ...k, credits: (await this.store.credits(k.id)) ?? null })));
  }

  revoke(id: string): Promise<boolean> {
    return this.store.revokeKey(id, new Date().toISOString());
  }
}
