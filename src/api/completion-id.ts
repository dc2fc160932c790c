import { randomInt } from 'node:crypto';

/**
 * `service-<digits>`: milliseconds since the epoch, then 9 random digits, so ids sort by time and
 * two processes minting ids in the same millisecond collide with odds of one in a billion.
 */
export function newCompletionId(now = Date.now()): string {
  return `service-${now}${String(randomInt(1_000_000_000)).padStart(9, '0')}`;
}
