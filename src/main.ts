import { createApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { QuotaOptions } from './chat/stages/quota.ts';
import { createEngine } from './engines/create-engine.ts';
import { ApiKeys } from './keys/api-keys.ts';
import { Drain } from './http/drain.ts';
import { Guard } from './guard/guard.ts';
import { ImageClassifier } from './guard/image/image-classifier.ts';
import { TextClassifier } from './guard/text/text-classifier.ts';
import { createStore } from './store/create-store.ts';
import { attachmentLimitsOf, createTasks, workerLimitsOf } from './tasks/create-tasks.ts';

async function start(): Promise<void> {
  const config = loadConfig(process.env);
  const engine = await createEngine(config);
  const tasks = createTasks(config, engine);
  const store = createStore({ redisUrl: config.redisUrl, keysFile: config.keysFile, cacheMaxEntries: config.cache.maxEntries });
  const keys = new ApiKeys(store, config.apiKey ? [config.apiKey] : []);
  const drain = new Drain();
  // The classifiers' workers start with the first guarded request, and load their models once.
  const guard = new Guard(
    new TextClassifier({ ...config.guard, threads: config.local.threads, timeoutMs: config.tasks.timeoutMs }),
    new ImageClassifier(workerLimitsOf(config)),
  );
  const app = createApp({
    engine, tasks, keys, store, drain, guard,
    quota: quotaOptionsOf(config),
    cache: { scope: config.cache.scope, ttlSeconds: config.cache.ttlSeconds },
    attachmentLimits: attachmentLimitsOf(config),
    bodyLimitBytes: config.bodyLimitBytes,
    validateResponses: config.validateResponses,
  });
  const server = await new Promise<ReturnType<typeof app.listen>>((resolve, reject) => {
    // Express 5 hands a failed listen (a port in use, an address not on this machine) to this callback.
    const listening = app.listen(config.port, config.host, (err?: Error) => {
      if (err) reject(new ConfigError(`cannot listen on ${config.host}:${config.port} (HOST, PORT): ${err.message}`));
      else resolve(listening);
    });
  });
  console.log(`Chat completion service on http://${config.host}:${config.port}/v1\n  engine: ${engine.description}`);

  /** Stop accepting, let what is in flight finish (up to SHUTDOWN_GRACE_MS), end the rest cleanly, close. */
  const shutdown = async (signal: string) => {
    console.log(`${signal}: ${drain.size} requests in flight; draining for up to ${config.shutdownGraceMs} ms`);
    server.close();
    server.closeIdleConnections();
    const ended = await drain.drain(config.shutdownGraceMs);
    if (ended > 0) console.log(`${ended} requests still running were ended with an error frame or a 503`);
    setTimeout(() => server.closeAllConnections(), 1000).unref(); // the last writes, then the sockets
    await Promise.allSettled([engine.close?.(), tasks.close(), store.close(), guard.close()]);
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}

/** Prices and service-wide limits, as the quota stage takes them. */
export function quotaOptionsOf(config: Config): QuotaOptions {
  return {
    prices: { prompt: config.credits.per1kPromptTokens, completion: config.credits.per1kCompletionTokens },
    defaults: config.defaultLimits,
  };
}

start().catch((err: unknown) => {
  // One clear line for a setting to fix; the whole error for anything else.
  console.error(err instanceof ConfigError ? `Configuration error: ${err.message}` : err);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
