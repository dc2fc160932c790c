import type { Engine } from '../engines/engine.ts';
import type { Guard } from '../guard/guard.ts';
import type { Store } from '../store/store.ts';
import type { TaskRegistry } from '../tasks/registry.ts';
import { type Next, pipeline } from './pipeline.ts';
import { generate } from './stages/generate.ts';
import { guard } from './stages/guard.ts';
import { moaRouter } from './stages/moa-router.ts';
import { quota, type QuotaOptions } from './stages/quota.ts';
import { taskMode } from './stages/task-mode.ts';
import { type CacheOptions, verifiedCache } from './stages/verified-cache.ts';
import { semanticCache, type SemanticCacheOptions } from './stages/semantic-cache.ts';
import type { Embedder } from './semantic/embedder.ts';

export interface PipelineDeps {
  engine: Engine;
  tasks: TaskRegistry;
  store: Store;
  quota: QuotaOptions;
  cache: CacheOptions;
  /** With both, the semantic layer runs behind the exact cache (`CACHE_MODE=semantic`). */
  semantic?: { embedder: Embedder; options: SemanticCacheOptions };
  /** The content guard; without it a `<guard>` request is refused (503), never passed unchecked. */
  guard?: Guard;
}

/** How a chat completion is made, stage by stage. */
export function createCompletionPipeline(deps: PipelineDeps): Next {
  const countTokens = deps.engine.countTokens?.bind(deps.engine);
  return pipeline([
    quota(deps.store, { ...deps.quota, ...(countTokens ? { countTokens } : {}) }), // 429, 402; credits settled at the end
    verifiedCache(deps.store, deps.cache), // a verified answer stored before answers at once
    ...(deps.semantic ? [semanticCache(deps.store, deps.semantic.embedder, deps.semantic.options)] : []), // or one to a paraphrase, under δ
    guard(deps), // <guard>CODES</guard>: the input checked now, the answer as it comes
    taskMode(deps), // <task>NAME</task>: the task answers, no model
    moaRouter(deps), // attachments through the internal tasks: precontext, and context for the model
    generate(deps.engine), // the model answers
  ]);
}
