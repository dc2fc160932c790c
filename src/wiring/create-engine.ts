import { withVerifiedOutput } from '../engines/verified-output.ts';
import { existsSync } from 'node:fs';
import { type Config, ConfigError } from '../config.ts';
import type { Engine } from '../engines/engine.ts';
import { createLocalEngine } from '../engines/local/local-engine.ts';
import { type QueueObserver, withQueue } from '../engines/queued-engine.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';

/** The configured engine, with output verification inside and the fair queue around it. */
export async function createEngine(config: Config, queueObserver?: QueueObserver): Promise<Engine> {
  const queue = { maxWaiting: config.queueMaxWaiting, ...(queueObserver ? { observer: queueObserver } : {}) };
  if (config.engine === 'upstream') {
    const { baseUrl, apiKey, model, timeoutMs, answerTimeoutMs, concurrency, vision, cacheSalt } = config.upstream;
    const upstream = createUpstreamEngine({ baseUrl: baseUrl!, ...(apiKey ? { apiKey } : {}), model, timeoutMs, answerTimeoutMs, vision, cacheSalt });
    return withQueue(withVerifiedOutput(upstream), { ...queue, concurrency });
  }
  if (!existsSync(config.local.modelPath)) {
    throw new ConfigError(`MODEL_PATH: no model file at ${config.local.modelPath} (make setup installs the default one)`);
  }
  const local = await createLocalEngine(config.local);
  return withQueue(withVerifiedOutput(local), { ...queue, concurrency: config.local.parallel });
}
