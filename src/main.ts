import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createEngine } from './engines/create-engine.ts';
import { KeyStore } from './keys/key-store.ts';
import { attachmentLimitsOf, createTasks } from './tasks/create-tasks.ts';

async function start(): Promise<void> {
  const config = loadConfig(process.env);
  const engine = await createEngine(config);
  const tasks = createTasks(config, engine);
  const keys = new KeyStore(config.keysFile, config.apiKey ? [config.apiKey] : []);
  const app = createApp({
    engine, tasks, keys,
    attachmentLimits: attachmentLimitsOf(config),
    bodyLimitBytes: config.bodyLimitBytes,
    validateResponses: config.validateResponses,
  });
  const server = app.listen(config.port, config.host, () => {
    console.log(`Chat completion service on http://${config.host}:${config.port}/v1\n  engine: ${engine.description}`);
  });

  const shutdown = (signal: string) => {
    console.log(`${signal}: closing`);
    server.close(() => void Promise.allSettled([engine.close?.(), tasks.close()]).finally(() => process.exit(0)));
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

start().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? `Configuration error: ${err.message}` : err);
  process.exit(err instanceof ConfigError ? 2 : 1);
});
