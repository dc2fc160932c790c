import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

it('has working defaults', () => {
  const config = loadConfig({});
  assert.equal(config.port, 8080);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.bodyLimitBytes, 20 * 1024 * 1024);
  assert.equal(config.apiKey, undefined);
  assert.equal(config.validateResponses, true);
});

it('reads the environment and refuses bad values clearly', () => {
  const config = loadConfig({ PORT: '9000', SERVICE_API_KEY: 'k', NODE_ENV: 'production' });
  assert.equal(config.port, 9000);
  assert.equal(config.apiKey, 'k');
  assert.equal(config.validateResponses, false);
  assert.throws(() => loadConfig({ PORT: 'eighty' }), (e: unknown) => e instanceof ConfigError && /PORT/.test(e.message));
  assert.throws(() => loadConfig({ VALIDATE_RESPONSES: 'maybe' }), ConfigError);
});
