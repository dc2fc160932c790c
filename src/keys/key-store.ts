import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { serviceUnavailable } from '../errors/service-error.ts';
import type { Caller, CallerResolver } from './caller.ts';

export interface StoredKey {
  id: string;
  name: string;
  /** SHA-256 of the key, hex; the key itself is never stored. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface KeyStoreOptions {
  /** Where a keys file that cannot be read as keys is reported. */
  log?: Pick<Console, 'warn'>;
}

/** The key given by `SERVICE_API_KEY`, kept in memory only. */
const ENV_CALLER: Caller = { keyId: 'env', name: 'SERVICE_API_KEY', rpm: null, tpm: null };

const hashOf = (key: string) => createHash('sha256').update(key).digest();

/**
 * API keys in a JSON file, as hashes only. The server re-reads the file when it changes, so keys
 * made or revoked by the CLI take effect without a restart. Keys given at start (`SERVICE_API_KEY`)
 * live in memory only. A file that cannot be read as keys (a half-finished hand edit) leaves the
 * keys read before it in force rather than locking everyone out or failing every request.
 */
export class KeyStore implements CallerResolver {
  private keys: StoredKey[] = [];
  private loadedMtimeMs = -1;
  private currentProblem: string | undefined;
  private readonly extraHashes: Buffer[];
  private readonly log: Pick<Console, 'warn'>;

  constructor(readonly file: string, extraKeys: string[] = [], options: KeyStoreOptions = {}) {
    this.extraHashes = extraKeys.filter((k) => k !== '').map(hashOf);
    this.log = options.log ?? console;
  }

  /** Why the keys file was not read the last time it changed, or undefined when it was. */
  problem(): string | undefined {
    this.reloadIfChanged();
    return this.currentProblem;
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

  verify(key: string): boolean {
    return this.match(key) !== undefined;
  }

  async resolve(key: string): Promise<Caller | undefined> {
    return this.match(key);
  }

  /** Compares against every live hash in constant time each, with no early exit. */
  private match(key: string): Caller | undefined {
    const presented = hashOf(key);
    const same = (hex: Buffer) => hex.length === presented.length && timingSafeEqual(hex, presented);
    let caller: Caller | undefined;
    for (const k of this.list()) {
      if (k.revokedAt === null && same(Buffer.from(k.hash, 'hex'))) caller ??= { keyId: k.id, name: k.name, rpm: null, tpm: null };
    }
    for (const hash of this.extraHashes) {
      if (same(hash)) caller ??= ENV_CALLER;
    }
    return caller;
  }

  private reloadIfChanged(): void {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(this.file).mtimeMs;
    } catch {
      this.keys = [];
      this.loadedMtimeMs = -1;
      this.currentProblem = undefined;
      return;
    }
    if (mtimeMs === this.loadedMtimeMs) return;
    // Remembered even when the file is bad, so each bad version is read and reported once.
    this.loadedMtimeMs = mtimeMs;
    try {
      this.keys = parseKeys(readFileSync(this.file, 'utf8'));
      this.currentProblem = undefined;
    } catch (err) {
      this.currentProblem = `The keys file ${this.file} cannot be read as keys (${(err as Error).message}); `
        + `the ${this.keys.length} keys read before stay in force until it is fixed.`;
      this.log.warn(this.currentProblem);
    }
  }

  private save(keys: StoredKey[]): void {
    // Writing the keys read before over a broken file would silently drop whatever it now holds.
    if (this.currentProblem) throw serviceUnavailable(this.currentProblem, 'keys_file_invalid');
    mkdirSync(dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
    renameSync(tmp, this.file);
    this.keys = keys;
    this.loadedMtimeMs = statSync(this.file).mtimeMs;
  }
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** The file's keys; throws on anything else, so half a key set is never taken for the whole. */
function parseKeys(text: string): StoredKey[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new TypeError('not a JSON array');
  parsed.forEach((entry: Partial<Record<keyof StoredKey, unknown>> | null, i) => {
    const valid = typeof entry === 'object' && entry !== null
      && isString(entry.id) && isString(entry.name) && isString(entry.createdAt)
      && isString(entry.hash) && /^[0-9a-f]{64}$/.test(entry.hash)
      && (entry.revokedAt === null || isString(entry.revokedAt));
    if (!valid) throw new TypeError(`entry ${i} is not {id, name, hash (64 hex digits), createdAt, revokedAt}`);
  });
  return parsed as StoredKey[];
}
