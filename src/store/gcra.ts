// The Generic Cell Rate Algorithm over a one-minute window. One number of state per counter (the
// theoretical arrival time, TAT) instead of a window of timestamps, so it is O(1) in memory and
// maps onto one Redis key. The Lua twin in redis-scripts.ts must compute exactly what this does:
// both backends answer the same decision for the same inputs.
import type { RateDecision } from './store.ts';

export const WINDOW_MS = 60_000;
/**
 * Float slack for the admit test: the TAT is a sum of fractional emission intervals (60000/7 ms,
 * ...), so "exactly full" can come out a few ULPs (~1e-4 ms at today's epoch) over the window.
 */
export const SLACK_MS = 0.01;

export interface GcraOutcome {
  decision: RateDecision;
  /** The TAT to store; undefined when the call was refused and the state is unchanged. */
  newTat: number | undefined;
}

/** `storedTat` undefined: the counter is fresh (or expired, which is the same thing). */
export function gcra(storedTat: number | undefined, limit: number, cost: number, now: number): GcraOutcome {
  const interval = WINDOW_MS / limit;
  const tat = Math.max(storedTat ?? now, now);
  const newTat = tat + cost * interval;
  const remainingAt = (t: number) => Math.max(0, Math.floor((WINDOW_MS - (t - now) + SLACK_MS) / interval));
  if (cost <= limit && newTat - now <= WINDOW_MS + SLACK_MS) {
    return {
      decision: { allowed: true, limit, remaining: remainingAt(newTat), resetMs: Math.ceil(newTat - now), retryAfterMs: 0 },
      newTat,
    };
  }
  // More than a whole minute's allowance can never fit: say so rather than name a time that lies.
  const retryAfterMs = cost > limit ? Number.POSITIVE_INFINITY : Math.max(1, Math.ceil(newTat - now - WINDOW_MS));
  return {
    decision: { allowed: false, limit, remaining: remainingAt(tat), resetMs: Math.ceil(tat - now), retryAfterMs },
    newTat: undefined,
  };
}

/**
 * The TAT after `cost` units already spent: never refused, so it may run past the window, and
 * then the counter's next admissions wait until it is back within it.
 */
export function charge(storedTat: number | undefined, limit: number, cost: number, now: number): number {
  return Math.max(storedTat ?? now, now) + cost * (WINDOW_MS / limit);
}
