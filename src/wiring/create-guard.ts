import type { Config } from '../config.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';
import { Guard, type TextScorer } from '../guard/guard.ts';
import { ImageClassifier } from '../guard/image/image-classifier.ts';
import { TextClassifier } from '../guard/text/text-classifier.ts';
import { UpstreamTextReader } from '../guard/text/upstream-reader.ts';
import { workerLimitsOf } from './create-tasks.ts';

/**
 * The guard's readers: the local text classifier unless a Llama Guard upstream reads text alone,
 * that upstream when one is set (GUARD_UPSTREAM_*), and the image classifiers. Each loads its
 * models in its own process (or on its own server), once.
 */
export function createGuard(config: Config): Guard {
  const queue = { maxQueued: config.tasks.queueMax, perCaller: config.tasks.queuePerCaller };
  const { upstream, ...local } = config.guard;
  const readers: TextScorer[] = [];
  if (upstream?.mode !== 'alone') {
    readers.push(new TextClassifier({ ...local, threads: config.local.threads, timeoutMs: config.tasks.timeoutMs, ...queue }));
  }
  if (upstream) {
    const { baseUrl, apiKey, model, timeoutMs, chunkChars, concurrency, cacheSalt } = upstream;
    const engine = createUpstreamEngine({ baseUrl, ...(apiKey ? { apiKey } : {}), model, timeoutMs, cacheSalt });
    readers.push(new UpstreamTextReader(engine, { chunkChars, concurrency, timeoutMs, ...queue }));
  }
  return new Guard(readers, new ImageClassifier(workerLimitsOf(config)));
}
