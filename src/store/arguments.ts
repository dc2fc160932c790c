// Argument checks shared by both backends, so a bad call fails the same way on either and a
// number Redis would store as text (or round) never reaches it.
import type { KeyRecord } from './store.ts';

/** Whole credits, of either sign: balances may go below zero when a settlement adds a negative amount. */
export function checkCredits(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a whole number, not ${value}`);
}

export function checkAmount(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a whole number >= 0, not ${value}`);
}

/** A per-minute limit: a whole number >= 1 (a limit of 0 would refuse everything forever), or null. */
export function checkLimit(value: number | null | undefined, what: string): void {
  if (value === null || value === undefined) return;
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${what} must be a whole number >= 1 or null, not ${value}`);
}

export const HASH_PATTERN = /^[0-9a-f]{64}$/;

export function checkRecord(record: KeyRecord): void {
  if (typeof record.id !== 'string' || record.id === '') throw new RangeError('a key needs an id');
  if (!HASH_PATTERN.test(record.hash)) throw new RangeError('a key hash is 64 lowercase hex digits (SHA-256)');
  checkLimit(record.rpm, 'rpm');
  checkLimit(record.tpm, 'tpm');
}

export function checkRate(limitPerMinute: number, cost: number, nowMs: number): void {
  if (!Number.isFinite(limitPerMinute) || limitPerMinute <= 0) throw new RangeError(`limitPerMinute must be > 0, not ${limitPerMinute}`);
  if (!Number.isFinite(cost) || cost < 0) throw new RangeError(`cost must be >= 0, not ${cost}`);
  if (!Number.isFinite(nowMs)) throw new RangeError(`nowMs must be a finite number, not ${nowMs}`);
}

export function checkTtl(ttlSeconds: number): void {
  if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) throw new RangeError(`ttlSeconds must be > 0, not ${ttlSeconds}`);
}
