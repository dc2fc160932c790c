import { createApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { createScriptedEngine, echoScript } from './engines/scripted-engine.ts';
import { KeyStore } from './keys/key-store.ts';

function start(): void {
  const config = loadConfig(process.env);
  const engine = createScriptedEngine(echoScript);
  console.warn(
    '\n  WARNING: serving the SCRIPTED engine: answers echo the request; no model generates them.\n',
  );
  const keys = new KeyStore(config.keysFile, config.apiKey ? [config.apiKey] : []);
  const app = createApp({ engine, keys, bodyLimitBytes: config.bodyLimitBytes, validateResponses: config.validateResponses });
  const server = app.listen(config.port, config.host, () => {
    console.log(`Chat completion service on http://${config.host}:${config.port}/v1 (engine: ${engine.description})`);
  });

  const shutdown = (signal: string) => {
    console.log(`${signal}: closing`);
    server.close(() => void Promise.resolve(engine.close?.()).finally(() => process.exit(0)));
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

try {
  start();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(`Configuration error: ${err.message}`);
    process.exit(2);
  }
  throw err;
}
