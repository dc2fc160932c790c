import type { Observation } from '../../store/store.ts';

/**
 * How far below the new prompt's similarity the observations that estimate its error may reach.
 * The estimate assumes that the chance a cached answer is wrong does not grow with similarity, so
 * the error seen in [s − band, s] is at least the error at s for any band: each is an estimate from
 * above, and the lowest of them is used. A narrow band holds few observations (a cold estimate); a
 * wide one reaches down to where answers are wrong. Chosen on the tuning parts (the bench's
 * BENCH_TUNING_ONLY=1, 8 passes, δ = 0.02, the word-piece alignment): one band of 0.05 served 6%
 * of the paraphrases, of 0.1 9%; these five 31% (40% once warm), all with no wrong hit. Counting
 * everything at or above s − band instead would be an estimate from below.
 */
export const BANDS = [0.05, 0.1, 0.2, 0.3, 0.5];

/**
 * The most the scope's pool counts for in one entry's estimate, in observations — its latest ones
 * in the band, so the prior follows the scope's traffic as it changes: enough for δ = 0.02 to be
 * reached from the pool alone (1 / 82), few enough that one wrong answer of the entry's own in the
 * band outweighs any number of the pool's right ones ((1 + 1) / (80 + 1 + 2) > 0.02).
 */
export const PRIOR_WEIGHT = 80;

/**
 * Whether a prompt at similarity `s` to a cached entry may be answered by that entry, with δ =
 * `maxError`: the entry allows it (never seen wrong at or above s) and the estimated probability
 * that this entry's answer is wrong at s stays at most δ.
 */
export function mayServe(own: Observation[], pool: Observation[], s: number, maxError: number, entry?: string): boolean {
  return entryAllows(own, s) && estimatedError(own, pool, s, entry) <= maxError;
}

/** An entry's own threshold, after vCache (arXiv 2502.03771): nothing at or below a similarity where it was seen wrong. */
export function entryAllows(own: Observation[], s: number): boolean {
  return !own.some((o) => !o.ok && o.s >= s);
}

/**
 * The probability that `entry` answers wrongly at similarity `s`: the posterior mean under a
 * uniform prior, (wrong + 1) / (seen + 2), over the verifications with similarity in [s − band, s],
 * the lowest over BANDS — the entry's own, each counted once, and the latest PRIOR_WEIGHT of the
 * scope's pool's of other entries (every comparison that passed the candidate filter, the
 * population a hit is drawn from). So a new entry is served on what its scope learned (48 clean
 * there for δ = 0.02), and an entry that was wrong near s is held back by its own evidence.
 */
export function estimatedError(own: Observation[], pool: Observation[], s: number, entry?: string): number {
  return Math.min(...BANDS.map((band) => estimatedErrorIn(band, own, pool, s, entry)));
}

function estimatedErrorIn(band: number, own: Observation[], pool: Observation[], s: number, entry?: string): number {
  const inBand = (o: Observation) => o.s <= s && o.s >= s - band;
  // The pool is oldest first. All of it scaled down to PRIOR_WEIGHT would let thousands of right
  // answers from earlier traffic vouch for today's, whose answers may be wrong more often.
  const others = pool.filter((o) => inBand(o) && (entry === undefined || o.entry !== entry)).slice(-PRIOR_WEIGHT);
  const mine = own.filter(inBand);
  const wrong = [...others, ...mine].filter((o) => !o.ok).length;
  return (wrong + 1) / (others.length + mine.length + 2);
}
