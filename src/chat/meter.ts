import type { TokenUsage } from '../engines/engine.ts';
import type { PrecontextEntry, Task, TaskInput } from '../tasks/task.ts';
import type { TaskUnits } from '../tasks/task.ts';
import { addUnits, unitsOf } from './prices.ts';

/**
 * What one request really did, written where the work is done (a task run, the model's events)
 * and read by the quota stage when it settles. One per request, whatever path the answer takes:
 * a blocked, cut or failed answer is billed from here, not from the usage its events end with.
 */
export class Meter {
  readonly units: TaskUnits = {};
  /** Tokens of model passes made by tasks (the scraper's extraction). */
  readonly taskTokens: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  /** The model's answer: the prompt it was given, whether it began, what it said, and its usage at `done`. */
  generation: { prompt: string; started: boolean; text: string; usage?: TokenUsage } | undefined;
  /**
   * The credits taken for the request once settled (undefined: not settled, e.g. refused before
   * any reservation). Read when the request has wholly ended, so that a request that got no
   * `usage` (its client left, it failed) still has its charge on record (the metrics).
   */
  credits: number | undefined;

  /** A task ran and answered `entry`. */
  task(entry: PrecontextEntry, input: { text: string }): void {
    addUnits(this.units, unitsOf(entry, input));
  }

  /**
   * Runs a task and records its work: what its answer says it consumed or, when its caller left
   * before it answered (a search or a fetch stops then), the work it had committed to (sent).
   * A task that fails on its own (a provider's error) is not charged.
   */
  async run(task: Task, input: TaskInput): Promise<PrecontextEntry> {
    const committed: TaskUnits = {};
    try {
      const entry = await task.run({ ...input, onTokens: (usage) => this.tokens(usage), onCommitted: (units) => addUnits(committed, units) });
      this.task(entry, input);
      return entry;
    } catch (err) {
      if (input.signal.aborted) addUnits(this.units, committed);
      throw err;
    }
  }

  /** A task's own model pass generated this. */
  tokens(usage: TokenUsage): void {
    this.taskTokens.promptTokens += usage.promptTokens;
    this.taskTokens.completionTokens += usage.completionTokens;
  }
}
