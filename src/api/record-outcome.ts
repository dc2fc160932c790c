import type { Completion } from '../chat/pipeline.ts';
import type { RequestContext } from '../chat/request-context.ts';
import type { GuardrailsResult } from '../contract/wire-types.ts';
import type { GenerationEvent } from '../engines/engine.ts';
import { tapEvents } from '../engines/tap-events.ts';
import type { RequestOutcome } from '../http/request-outcome.ts';

const verdictsOf = (completion: Completion) =>
  completion.precontext.flatMap((e) => (e.name === 'guardrails' ? [e.result as GuardrailsResult] : []));

/** The guard's matched codes so far (none: passed); left absent for a request that was not guarded. */
function recordGuard(outcome: RequestOutcome, ctx: RequestContext, completion: Completion): void {
  if (ctx.directives.guard) outcome.guardMatched = verdictsOf(completion).flatMap((v) => v.matched.map((m) => m.code));
}

/** What answered the request and the cache's part, once the pipeline has answered. */
export function recordCompletion(outcome: RequestOutcome, ctx: RequestContext, completion: Completion, engineKind: string): void {
  const blockedOnInput = verdictsOf(completion).some((v) => v.stage === 'input' && !v.safe);
  outcome.cache = completion.cached ? 'hit' : ctx.flags.bypassCache ? 'bypass' : 'miss';
  outcome.engine = completion.cached ? 'cache' : blockedOnInput ? 'guard' : ctx.directives.task ? `task:${ctx.directives.task}` : engineKind;
  recordGuard(outcome, ctx, completion);
}

/**
 * Passes the events on, noting the time to the first output and the token counts. Output
 * verdicts join the precontext while the answer is made: the guard's codes are read again at the end.
 */
export function observeEvents(events: AsyncIterable<GenerationEvent>, outcome: RequestOutcome, ctx: RequestContext, completion: Completion): AsyncIterableIterator<GenerationEvent> {
  return tapEvents(events, {
    event(event) {
      if (event.type === 'done') {
        outcome.promptTokens = event.usage.promptTokens;
        outcome.completionTokens = event.usage.completionTokens;
        recordGuard(outcome, ctx, completion);
      } else {
        outcome.ttftMs ??= performance.now() - outcome.startedAt;
      }
    },
  });
}
