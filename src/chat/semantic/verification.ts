import type { Observation } from '../../store/store.ts';

/**
 * How far below the new prompt's similarity the observations that estimate its error reach. The
 * estimate assumes that the chance a cached answer is wrong does not grow with similarity, so the
 * error seen in [s − BAND, s] is at least the error at s: a wider band is more conservative.
 */
export const BAND = 0.1;

/**
 * Whether a prompt at similarity `s` to a cached entry may be answered by that entry, given the
 * entry's own verifications and its scope's pool of them (the entry's included), with δ =
 * `maxError`. After vCache (arXiv 2502.03771), each entry learns its own threshold:
 * - it answers nothing below the lowest similarity where it was seen right (it is never trusted
 *   further out than it was checked; so an entry never verified answers nothing: a cold start);
 * - nor at or below a similarity where it was seen wrong;
 * - and the estimated probability of a wrong answer at s stays at most δ: the posterior mean
 *   under a uniform prior, (wrong + 1) / (seen + 2), over the pool's verifications within the band
 *   below s. So δ = 0.02 needs at least 48 right answers and none wrong in that band.
 */
export function mayServe(own: Observation[], pool: Observation[], s: number, maxError: number): boolean {
  if (own.some((o) => !o.ok && o.s >= s)) return false;
  if (!own.some((o) => o.ok && o.s <= s)) return false;
  return estimatedError(pool, s) <= maxError;
}

export function estimatedError(pool: Observation[], s: number): number {
  const near = pool.filter((o) => o.s <= s && o.s >= s - BAND);
  const wrong = near.filter((o) => !o.ok).length;
  return (wrong + 1) / (near.length + 2);
}
