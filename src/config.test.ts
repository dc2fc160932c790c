import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError, ENV, loadConfig } from './config.ts';

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

it('reads the operational settings: log level, metrics port, CORS origins', () => {
  const config = loadConfig({ LOG_LEVEL: 'debug', METRICS_PORT: '9464', CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' });
  assert.deepEqual([config.logLevel, config.metricsPort, config.corsOrigins], ['debug', 9464, ['https://app.example.com', 'http://localhost:5173']]);
  assert.deepEqual([loadConfig({}).logLevel, loadConfig({}).metricsPort, loadConfig({}).corsOrigins], ['info', undefined, []]);
  const refused = (env: Record<string, string>, message: RegExp) =>
    assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && message.test(e.message));
  refused({ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/);
  refused({ METRICS_PORT: '0' }, /^METRICS_PORT must be an integer from 1 to 65535/);
  refused({ CORS_ORIGINS: 'https://app.example.com/path' }, /^CORS_ORIGINS must list origins/);
  refused({ ENGINE: 'upstream' }, /^ENGINE=upstream needs UPSTREAM_BASE_URL/);
});

it('bounds the cache in bytes, in all and per entry', () => {
  assert.deepEqual([loadConfig({}).cache.maxBytes, loadConfig({}).cache.maxEntryBytes], [256 * 1024 * 1024, 16 * 1024 * 1024]);
  const config = loadConfig({ CACHE_MAX_BYTES: '1000000', CACHE_MAX_ENTRY_BYTES: '4096' });
  assert.deepEqual([config.cache.maxBytes, config.cache.maxEntryBytes], [1_000_000, 4096]);
  assert.throws(() => loadConfig({ CACHE_MAX_ENTRY_BYTES: '0' }), (e: unknown) => e instanceof ConfigError && /^CACHE_MAX_ENTRY_BYTES/.test(e.message));
  assert.throws(() => loadConfig({ CACHE_MAX_BYTES: '-1' }), (e: unknown) => e instanceof ConfigError && /^CACHE_MAX_BYTES/.test(e.message));
});

it("README's configuration table lists every setting with the schema's default", () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'), readme.indexOf('\n## Engines\n'));
  const rows = new Map<string, string>();
  for (const [, names, cell] of section.matchAll(/^\| (`[A-Z0-9_]+`(?: \/ `[A-Z0-9_]+`)*) \| ([^|]+) \|/gm)) {
    for (const [, name] of names!.matchAll(/`([A-Z0-9_]+)`/g)) rows.set(name!, cell!.trim());
  }
  // NODE_ENV is not a setting of ours (README names it under VALIDATE_RESPONSES).
  assert.deepEqual([...rows.keys()].sort(), Object.keys(ENV.shape).filter((name) => name !== 'NODE_ENV').sort());
  // Defaults that depend on another setting or the machine are settled by loadConfig: checked against it here.
  const settled: Record<string, [RegExp, unknown, unknown]> = {
    VALIDATE_RESPONSES: [/^`true` unless `NODE_ENV=production`$/, loadConfig({}).validateResponses, true],
    ENGINE: [/^`upstream` when `UPSTREAM_BASE_URL` is set, else `local`$/, loadConfig({}).engine, 'local'],
    THREADS: [/^the machine's cores$/, loadConfig({}).local.threads, availableParallelism()],
    GUARD_SPANS_HEADS: [/^`heads-spans.json` beside `GUARD_HEADS`$/, loadConfig({ GUARD_HEADS: '/srv/guard/heads.json' }).guard.spansHeadsPath, '/srv/guard/heads-spans.json'],
  };
  const defaults: Record<string, unknown> = ENV.parse({});
  const root = fileURLToPath(new URL('../', import.meta.url));
  for (const [name, cell] of rows) {
    if (name in settled) {
      const [words, actual, expected] = settled[name]!;
      assert.match(cell, words, name);
      assert.equal(actual, expected, name);
      continue;
    }
    const value = defaults[name];
    if (value === undefined || (Array.isArray(value) && value.length === 0)) assert.match(cell, /^unset\b/, name);
    else assert.equal(/^`([^`]+)`/.exec(cell)?.[1], String(value).replace(root, ''), name);
  }
});

it('reads the semantic cache\'s mode, bound and verification share', () => {
  const defaults = loadConfig({}).cache;
  assert.deepEqual([defaults.mode, defaults.maxError, defaults.verifyShare], ['exact', 0.02, 0.1]);
  const config = loadConfig({ CACHE_MODE: 'semantic', CACHE_MAX_ERROR: '0.05', CACHE_VERIFY_SHARE: '0.2' }).cache;
  assert.deepEqual([config.mode, config.maxError, config.verifyShare], ['semantic', 0.05, 0.2]);
  for (const [name, value] of [['CACHE_MODE', 'fuzzy'], ['CACHE_MAX_ERROR', '1.5'], ['CACHE_MAX_ERROR', '0.5'], ['CACHE_VERIFY_SHARE', '-0.1']]) {
    assert.throws(() => loadConfig({ [name!]: value }), (e: unknown) => e instanceof ConfigError && e.message.startsWith(name!));
  }
});
