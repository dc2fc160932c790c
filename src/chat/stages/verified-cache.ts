import { type CacheScope, cacheKeyOf } from '../cache-key.ts';
import type { GenerationEvent } from '../../engines/engine.ts';
import { EventFold, type FoldedGeneration, replayEvents } from '../../engines/fold-events.ts';
import { tapEvents } from '../../engines/tap-events.ts';
import { problemWith } from '../../engines/verified-output.ts';
import type { Store } from '../../store/store.ts';
import type { PrecontextEntry } from '../../tasks/task.ts';
import type { Completion, Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

export interface CacheOptions {
  scope: CacheScope;
  ttlSeconds: number;
}

/** What the cache keeps of an answer: the answer itself and its precontext, as first generated. */
export interface CachedAnswer {
  folded: FoldedGeneration;
  precontext: PrecontextEntry[];
}

/**
 * The verified cache. A hit answers at once with the stored answer (its usage as first generated;
 * `vcache: true`). A miss lets the later stages answer, and stores the answer when it ends verified:
 * a normal end (`stop` or `tool_calls`, never `length` or an error), structured output valid
 * against its schema, tool arguments valid against their parameters. `x-service-bypass-cache`
 * neither reads nor writes; `x-service-zdr` may read what others stored, and never writes.
 */
export function verifiedCache(store: Store, options: CacheOptions): Stage {
  return async function verifiedCache(ctx, next) {
    if (ctx.flags.bypassCache) return next(ctx);
    const key = await cacheKeyOf(ctx, options.scope);
    const hit = await store.cacheGet(key);
    if (hit !== undefined) {
      const { folded, precontext } = JSON.parse(hit) as CachedAnswer;
      return { events: replayEvents(folded), precontext, cached: true };
    }
    const answer = await next(ctx);
    // A semantic hit is another request's answer: kept under this request's key, it would be
    // served again with no verification.
    if (ctx.flags.zdr || answer.cached) return answer;
    return { ...answer, events: storeWhenVerified(answer, ctx, (value) => store.cacheSet(key, value, options.ttlSeconds)) };
  };
}

/** Passes the events on; at `done`, before passing it, stores the whole answer if it verifies. */
function storeWhenVerified(answer: Completion, ctx: RequestContext, save: (value: string) => Promise<void>): AsyncIterableIterator<GenerationEvent> {
  const fold = new EventFold();
  return tapEvents(answer.events, {
    event(event) {
      const folded = fold.add(event);
      if (folded && !answer.blocked?.() && verified(folded, ctx)) {
        const value: CachedAnswer = { folded, precontext: answer.precontext };
        // The answer is whole at `done`; a store that fails costs the cache entry, never the answer.
        save(JSON.stringify(value)).catch((err: unknown) => ctx.log.warn(`cache store failed: ${(err as Error).message}`));
      }
    },
  });
}

export function verified(folded: FoldedGeneration, ctx: RequestContext): boolean {
  if (ctx.signal.aborted) return false; // an answer cut short by the client's leaving is not whole
  if (folded.finishReason !== 'stop' && folded.finishReason !== 'tool_calls') return false;
  return problemWith(folded, ctx.generation) === '';
}
