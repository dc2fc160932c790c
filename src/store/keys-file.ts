// The keys file's format: the JSON array of key entries that src/keys/key-store.ts reads and
// writes, each entry extended with its per-minute limits and credit balance. Entries written
// before those fields existed load with them null (no limit of their own, unlimited credits).
// Fields this code does not know are kept, so a newer writer's additions survive an older one.
import { HASH_PATTERN } from './arguments.ts';
import type { KeyRecord } from './store.ts';

export interface KeyEntry extends KeyRecord {
  /** Whole credits; null: unlimited. */
  credits: number | null;
  [field: string]: unknown;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isLimit = (v: unknown) => v === undefined || v === null || (Number.isSafeInteger(v) && (v as number) >= 1);
const isBalance = (v: unknown) => v === undefined || v === null || Number.isSafeInteger(v);

/** The file's entries; throws on anything else, so half a key set is never taken for the whole. */
export function parseEntries(text: string): KeyEntry[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new TypeError('not a JSON array');
  const ids = new Set<string>();
  const hashes = new Set<string>();
  return parsed.map((entry: Record<string, unknown> | null, i): KeyEntry => {
    const valid = typeof entry === 'object' && entry !== null
      && isString(entry.id) && isString(entry.name) && isString(entry.createdAt)
      && isString(entry.hash) && HASH_PATTERN.test(entry.hash)
      && (entry.revokedAt === null || isString(entry.revokedAt))
      && isLimit(entry.rpm) && isLimit(entry.tpm) && isBalance(entry.credits);
    if (!valid) {
      throw new TypeError(`entry ${i} is not {id, name, hash (64 hex digits), createdAt, revokedAt, `
        + 'rpm and tpm (whole numbers >= 1 or null), credits (a whole number or null)}');
    }
    const { id, hash } = entry as { id: string; hash: string };
    // A repeated hash would make "the key with this hash" ambiguous, a repeated id every update.
    if (ids.has(id)) throw new TypeError(`entry ${i} repeats the id ${id}`);
    if (hashes.has(hash)) throw new TypeError(`entry ${i} repeats the hash of an earlier entry`);
    ids.add(id);
    hashes.add(hash);
    return {
      ...entry,
      rpm: (entry.rpm as number | null | undefined) ?? null,
      tpm: (entry.tpm as number | null | undefined) ?? null,
      credits: (entry.credits as number | null | undefined) ?? null,
    } as KeyEntry;
  });
}

export function serializeEntries(entries: readonly KeyEntry[]): string {
  const ordered = entries.map(({ id, name, hash, createdAt, revokedAt, rpm, tpm, credits, ...rest }) => (
    { id, name, hash, createdAt, revokedAt, rpm, tpm, credits, ...rest }
  ));
  return JSON.stringify(ordered, null, 2) + '\n';
}

/** The record part of an entry, as a copy the caller may keep or change. */
export function toRecord(entry: KeyRecord): KeyRecord {
  const { id, name, hash, createdAt, revokedAt, rpm, tpm } = entry;
  return { id, name, hash, createdAt, revokedAt, rpm, tpm };
}
