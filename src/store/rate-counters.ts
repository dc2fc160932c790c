// GCRA state of the embedded backend: in memory, one number per counter. JavaScript runs each
// call to the end before the next, so a check-and-update here is atomic without a lock.
import { charge, gcra } from './gcra.ts';
import type { RateDecision } from './store.ts';

/** Past this many counters, a call first drops the ones that are back to full (TAT in the past). */
const SWEEP_ABOVE = 10_000;

export class RateCounters {
  private readonly tats = new Map<string, number>();
  private sweepAt = SWEEP_ABOVE;

  take(counter: string, limit: number, cost: number, now: number): RateDecision {
    if (this.tats.size >= this.sweepAt) this.sweep(now);
    const { decision, newTat } = gcra(this.tats.get(counter), limit, cost, now);
    if (newTat !== undefined) this.tats.set(counter, newTat);
    return decision;
  }

  charge(counter: string, limit: number, cost: number, now: number): void {
    if (this.tats.size >= this.sweepAt) this.sweep(now);
    this.tats.set(counter, charge(this.tats.get(counter), limit, cost, now));
  }

  /** A counter whose TAT has passed is indistinguishable from a fresh one, so forgetting it is exact. */
  private sweep(now: number): void {
    for (const [counter, tat] of this.tats) if (tat <= now) this.tats.delete(counter);
    // Sweep again only after as many new counters again, so a map of live counters costs O(1) per call.
    this.sweepAt = Math.max(SWEEP_ABOVE, this.tats.size * 2);
  }
}
