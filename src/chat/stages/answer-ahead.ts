import type { GenerationEvent } from '../../engines/engine.ts';
import type { Completion, Next } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

/**
 * The later stages, started before a stage knows whether it needs them, so that it waits for the
 * slower of its own work and theirs, not for both in turn (the semantic cache's lookup: a miss
 * with candidates). `take` answers with them as if they had been called then; `drop` stops them,
 * and nothing they did is answered (the stage that drops them answers from its cache, which the
 * quota stage never bills, whatever was metered on the way).
 */
export interface AnswerAhead {
  /** The later stages' completion once they have answered (a guarded request's input checked), its events unread. */
  answered(): Promise<Completion>;
  take(): Promise<Completion>;
  drop(): void;
}

/**
 * Starts `next` at once, with a signal of its own (the client's, or `drop`'s), and asks for its
 * first event, so that the model begins (a stream's first token; a whole answer when not
 * streamed). Only for work that is the model's alone: a task's units, once begun, are paid
 * (src/chat/meter.ts), so a stage starts ahead only a request that runs none.
 */
export function answerAhead(ctx: RequestContext, next: Next): AnswerAhead {
  const stop = new AbortController();
  const signal = AbortSignal.any([ctx.signal, stop.signal]);
  let dropped = false;
  const started = next({ ...ctx, signal, generation: { ...ctx.generation, signal } }).then((completion) => {
    const events = completion.events[Symbol.asyncIterator]();
    if (dropped) {
      close(events);
      return undefined;
    }
    const first = events.next();
    first.catch(() => {}); // a dropped answer's failure is nobody's; a taken one's is read by its reader
    return { completion, events, first };
  });
  started.catch(() => {}); // the same: thrown by `take`, or nobody's

  return {
    async answered() {
      const begun = await started;
      if (!begun) throw new Error('an answer started ahead was read after it was dropped');
      return begun.completion;
    },
    async take() {
      const begun = await started;
      if (!begun) throw new Error('an answer started ahead was taken after it was dropped');
      const { completion, events } = begun;
      let first: Promise<IteratorResult<GenerationEvent>> | undefined = begun.first;
      const passed: AsyncIterableIterator<GenerationEvent> = {
        [Symbol.asyncIterator]() {
          return this;
        },
        next() {
          const result = first ?? events.next();
          first = undefined;
          return result;
        },
        async return() {
          await events.return?.();
          return { done: true, value: undefined };
        },
      };
      // In place: the completion is the later stages' own object, whose `precontext` they may still fill.
      completion.events = passed;
      return completion;
    },
    drop() {
      dropped = true;
      stop.abort(new Error('the answer started ahead was not needed'));
      void started.then((begun) => begun && close(begun.events), () => {});
    },
  };
}

function close(events: AsyncIterator<GenerationEvent>): void {
  events.return?.().catch(() => {});
}
