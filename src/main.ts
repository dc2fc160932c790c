import express from 'express';
import { createApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import type { QuotaOptions } from './chat/stages/quota.ts';
import { createEngine } from './wiring/create-engine.ts';
import { ApiKeys } from './keys/api-keys.ts';
import { Drain } from './http/drain.ts';
import { operationalRoutes, Readiness } from './http/health.ts';
import { Metrics } from './http/metrics.ts';
import { createLogger, loggerOn } from './logging.ts';
import { loadBudgetJudge } from './chat/semantic/budget-judge.ts';
import { MiniLmEmbedder } from './chat/semantic/embedder.ts';
import { createStore } from './store/create-store.ts';
import { createFaultHandler, installFaultHandler } from './process/faults.ts';
import { removeStaleTempDirs } from './workers/temp-dirs.ts';
import { attachmentLimitsOf, createTasks } from './wiring/create-tasks.ts';
import { createGuard } from './wiring/create-guard.ts';

async function start(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  // A fault before the server listens has nothing to drain; `stop` becomes the shutdown once it does.
  let stop = async (_reason: string) => {};
  installFaultHandler(createFaultHandler({
    log: logger,
    drain: (reason) => stop(reason),
    exit: (code) => (logger.flush(), process.exit(code)),
    deadlineMs: config.shutdownGraceMs + 5000,
  }));
  // A crashed run's temp directories hold callers' files: removed before anything else can fail.
  const stale = await removeStaleTempDirs();
  if (stale.removed.length > 0) logger.info({ removed: stale.removed }, `removed ${stale.removed.length} temp directories of an earlier run`);
  if (stale.failed.length > 0) logger.warn({ failed: stale.failed }, 'stale temp directories that could not be removed');
  const metrics = new Metrics(loggerOn(logger));
  logger.info('loading the engine');
  const engine = await createEngine(config, metrics.queue);
  const tasks = createTasks(config, engine);
  const store = createStore({
    log: loggerOn(logger), // Redis lost and back, a lock removed: the process's lines (a failed request logs its own)
    redisUrl: config.redisUrl, keysFile: config.keysFile,
    cacheMaxEntries: config.cache.maxEntries, cacheMaxBytes: config.cache.maxBytes, cacheMaxEntryBytes: config.cache.maxEntryBytes,
  });
  const keys = new ApiKeys(store, config.apiKey ? [config.apiKey] : []);
  const drain = new Drain();
  const readiness = new Readiness({ store: () => store.ping() }, loggerOn(logger));
  // The classifiers load their models once, in their own processes, while the server starts.
  const guard = createGuard(config);
  const semantic = config.cache.mode === 'semantic';
  // Read before the server starts: a judge that is missing or fitted for other code stops it here, with how to build it.
  const judge = semantic && config.cache.judgeDir ? loadBudgetJudge(config.cache.judgeDir) : undefined;
  const embedder = semantic
    ? new MiniLmEmbedder({ python: config.guard.python, threads: config.local.threads, timeoutMs: config.tasks.timeoutMs, maxQueued: config.tasks.queueMax, perCaller: config.tasks.queuePerCaller, judgeDir: judge && config.cache.judgeDir })
    : undefined;
  const app = createApp({
    engine, tasks, keys, store, drain, guard,
    quota: quotaOptionsOf(config),
    cache: { scope: config.cache.scope, ttlSeconds: config.cache.ttlSeconds },
    ...(embedder ? { semantic: { embedder, options: { scope: config.cache.scope, ttlSeconds: config.cache.ttlSeconds, maxError: config.cache.maxError, verifyShare: config.cache.verifyShare, judge } } } : {}),
    attachmentLimits: attachmentLimitsOf(config),
    schemaLimits: config.schemas,
    bodyLimitBytes: config.bodyLimitBytes,
    validateResponses: config.validateResponses,
    log: loggerOn(logger),
    requestLogger: logger,
    metrics,
    metricsElsewhere: config.metricsPort !== undefined,
    readiness,
    corsOrigins: config.corsOrigins,
    docsFile: config.docsFile,
  });
  const server = await listen(app, config.port, config.host);
  // The operational endpoints on a port of their own stay up while the service drains.
  const operational = config.metricsPort === undefined ? undefined
    : await listen(express().use(operationalRoutes(readiness, metrics)), config.metricsPort, config.host, 'METRICS_PORT');
  logger.info({ engine: engine.description }, `Chat completion service on http://${config.host}:${config.port}/v1`);
  // Ready once the guard's classifiers and the tasks' models are loaded; a part that cannot start
  // is logged, and its requests get their own 503 or 500, while the rest is served.
  logger.info('warming the guard\'s classifiers and the tasks\' models');
  Promise.allSettled([
    embedder?.warm().catch((err: unknown) => logger.error({ err }, 'the semantic cache\'s encoder could not start: the exact cache alone answers')),
    guard.warm().catch((err: unknown) => logger.error({ err }, 'the guard could not start: guarded requests will get 503')),
    tasks.warm().catch((err: unknown) => logger.error({ err }, 'a task\'s model could not start: its requests will fail')),
  ]).then(() => (readiness.started(), logger.info('ready')));

  /**
   * Stop accepting, let what is in flight finish (up to SHUTDOWN_GRACE_MS), end the rest cleanly,
   * close. Once: a signal and a process fault (src/process/faults.ts) share the same drain.
   */
  let stopping: Promise<void> | undefined;
  stop = (reason: string) => (stopping ??= shutdown(reason));
  const shutdown = async (signal: string) => {
    readiness.draining();
    logger.info(`${signal}: ${drain.size} requests in flight; draining for up to ${config.shutdownGraceMs} ms`);
    server.close();
    server.closeIdleConnections();
    const ended = await drain.drain(config.shutdownGraceMs);
    if (ended > 0) logger.warn(`${ended} requests still running were ended with an error frame or a 503`);
    setTimeout(() => server.closeAllConnections(), 1000).unref(); // the last writes, then the sockets
    operational?.close();
    await Promise.allSettled([engine.close?.(), tasks.close(), store.close(), guard.close(), embedder?.close()]);
    logger.flush();
  };
  // Exit 0 after a signal's drain, unless a fault came first or during it (its exit code stays).
  const onSignal = (signal: string) => void stop(signal).then(() => process.exit());
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
}

/** Listens, or fails with one line naming the setting: a port in use, an address not on this machine. */
function listen(app: express.Express, port: number, host: string, setting = 'HOST, PORT') {
  return new Promise<ReturnType<express.Express['listen']>>((resolve, reject) => {
    // Express 5 hands a failed listen to this callback.
    const listening = app.listen(port, host, (err?: Error) => {
      if (err) reject(new ConfigError(`cannot listen on ${host}:${port} (${setting}): ${err.message}`));
      else resolve(listening);
    });
  });
}

/** Prices and service-wide limits, as the quota stage takes them. */
export function quotaOptionsOf(config: Config): QuotaOptions {
  return {
    prices: { prompt: config.credits.per1kPromptTokens, completion: config.credits.per1kCompletionTokens, units: config.credits.perUnit },
    bounds: {
      pdfMaxPages: config.tasks.pdfMaxPages,
      documentMaxImages: config.tasks.documentMaxImages,
      audioMaxSeconds: Math.max(config.tasks.audioMaxSeconds, config.tasks.videoMaxSeconds),
    },
    defaults: config.defaultLimits,
  };
}

start().catch((err: unknown) => {
  // One clear line for a setting to fix; the whole error for anything else.
  console.error(err instanceof ConfigError ? `Configuration error: ${err.message}` : err);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
