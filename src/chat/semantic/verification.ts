import type { Observation } from '../../store/store.ts';

/**
 * How far below the new prompt's similarity the observations that estimate its error reach. The
 * estimate assumes that the chance a cached answer is wrong does not grow with similarity, so the
 * error seen in [s − BAND, s] is at least the error at s: a wider band is more conservative.
 */
export const BAND = 0.1;

/**
 * Whether a prompt at similarity `s` to a cached entry may be answered by that entry, with δ =
 * `maxError`: the entry allows it (`entryAllows`, its own learned threshold, after vCache, arXiv
 * 2502.03771) and the estimated probability that such a hit is wrong stays at most δ.
 */
export function mayServe(own: Observation[], pool: Observation[], s: number, maxError: number): boolean {
  return entryAllows(own, s) && estimatedError(pool, s) <= maxError;
}

/**
 * An entry's own threshold, from its own verifications: it answers nothing below the lowest
 * similarity where it was seen right (never trusted further out than it was checked; so an entry
 * never verified answers nothing: a cold start), nor at or below a similarity where it was seen wrong.
 */
export function entryAllows(own: Observation[], s: number): boolean {
  return !own.some((o) => !o.ok && o.s >= s) && own.some((o) => o.ok && o.s <= s);
}

/**
 * The probability that a hit its entry allows is wrong, estimated from `pool`: the scope's
 * verifications of such would-be hits (those held back by this estimate and the verification
 * share's draws, each generated fresh and compared), so it measures the rule as it serves. The
 * posterior mean under a uniform prior, (wrong + 1) / (seen + 2), over those within the band below
 * s: δ = 0.02 needs at least 48 right and none wrong there.
 */
export function estimatedError(pool: Observation[], s: number): number {
  const near = pool.filter((o) => o.s <= s && o.s >= s - BAND);
  const wrong = near.filter((o) => !o.ok).length;
  return (wrong + 1) / (near.length + 2);
}
