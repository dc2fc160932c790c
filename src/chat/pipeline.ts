import type { GenerationEvent } from '../engines/engine.ts';
import type { PrecontextEntry } from '../tasks/task.ts';
import type { RequestContext } from './request-context.ts';

/** What the pipeline answers: the completion's one event stream, and the precontext gathered on the way. */
export interface Completion {
  events: AsyncIterable<GenerationEvent>;
  precontext: PrecontextEntry[];
  /** Served from the verified cache (`vcache: true`). */
  cached?: boolean;
  /** Response headers a stage adds (the rate-limit headers). */
  headers?: Record<string, string>;
  /**
   * Whether the guard replaced the answer, or its end: such an answer is never stored as verified.
   * A question, not a value: a streamed answer is judged as it goes, so the answer is known at
   * `done` at the latest, and a stage that passes the completion on as a copy (with events of its
   * own) must carry the question, never a value read before the end.
   */
  blocked?: () => boolean;
}

export type Next = (ctx: RequestContext) => Promise<Completion>;

/**
 * One step of making a completion. A stage answers by itself (a task, a cache hit), or calls
 * `next` with the context (or a changed copy) and returns, or wraps, what the later stages answer.
 */
export type Stage = (ctx: RequestContext, next: Next) => Promise<Completion>;

/** The stages in order; the last one must answer without calling `next`. */
export function pipeline(stages: Stage[]): Next {
  const from = (i: number): Next => (ctx) => {
    const stage = stages[i];
    if (!stage) throw new Error('the last stage of the pipeline called next');
    return stage(ctx, from(i + 1));
  };
  return from(0);
}
