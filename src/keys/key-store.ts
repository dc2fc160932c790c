import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { KeyVerifier } from '../middleware/bearer-auth.ts';

export interface StoredKey {
  id: string;
  name: string;
  /** SHA-256 of the key, hex; the key itself is never stored. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest();

/**
 * API keys in a JSON file, as hashes only. The server re-reads the file when it changes, so keys
 * made or revoked by the CLI take effect without a restart. Keys given at start (`SERVICE_API_KEY`)
 * live in memory only.
 */
export class KeyStore implements KeyVerifier {
  private keys: StoredKey[] = [];
  private loadedMtimeMs = -1;
  private readonly extraHashes: Buffer[];

  constructor(private readonly file: string, extraKeys: string[] = []) {
    this.extraHashes = extraKeys.filter((k) => k !== '').map(hashOf);
  }

  create(name: string): { key: string; record: StoredKey } {
    const key = `sk-service-${randomBytes(24).toString('base64url')}`;
    const record: StoredKey = {
      id: `key_${randomBytes(6).toString('hex')}`,
      name,
      hash: hashOf(key).toString('hex'),
      createdAt: new Date().toISOString(),
      revokedAt: null,
    };
    this.save([...this.list(), record]);
    return { key, record };
  }

  list(): StoredKey[] {
    this.reloadIfChanged();
    return [...this.keys];
  }

  /** Returns false when no key has that id or it was already revoked. */
  revoke(id: string): boolean {
    const keys = this.list();
    const target = keys.find((k) => k.id === id && k.revokedAt === null);
    if (!target) return false;
    target.revokedAt = new Date().toISOString();
    this.save(keys);
    return true;
  }

  /** Compares against every live hash in constant time each, with no early exit. */
  verify(key: string): boolean {
    const presented = hashOf(key);
    const live = [
      ...this.list().filter((k) => k.revokedAt === null).map((k) => Buffer.from(k.hash, 'hex')),
      ...this.extraHashes,
    ];
    let match = false;
    for (const hash of live) {
      if (hash.length === presented.length && timingSafeEqual(hash, presented)) match = true;
    }
    return match;
  }

  private reloadIfChanged(): void {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(this.file).mtimeMs;
    } catch {
      this.keys = [];
      this.loadedMtimeMs = -1;
      return;
    }
    if (mtimeMs === this.loadedMtimeMs) return;
    this.keys = JSON.parse(readFileSync(this.file, 'utf8')) as StoredKey[];
    this.loadedMtimeMs = mtimeMs;
  }

  private save(keys: StoredKey[]): void {
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
    renameSync(tmp, this.file);
    this.keys = keys;
    this.loadedMtimeMs = statSync(this.file).mtimeMs;
  }
}
