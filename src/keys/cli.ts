// API key administration on the configured store (the keys file, or Redis with REDIS_URL).
// `ensure-dev` is what `make run` calls on start.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger, loggerOn } from '../logging.ts';
import { createStore } from '../store/create-store.ts';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import { ApiKeys } from './api-keys.ts';

const USAGE = `usage: npm run keys -- <command>
  create NAME [--credits N] [--rpm N] [--tpm N]   a new key, shown once
  list                                            every key, its balance and limits
  revoke KEY_ID
  credit KEY_ID N                                 add N credits (negative takes away)
  limits KEY_ID [--rpm N|none] [--tpm N|none]     per-minute limits of the key
  unlimited KEY_ID                                the key pays nothing (no balance)
  ensure-dev                                      a development key when there is no live key`;

const OPTIONS = { credits: { type: 'string' }, rpm: { type: 'string' }, tpm: { type: 'string' } } as const;

/** A whole number, or null for `none`; undefined when the option is absent. */
function count(raw: string | undefined, name: string): number | null | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'none') return null;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`--${name} takes a whole number or none, not "${raw}"`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const config = loadConfig(process.env);
  // The store's warnings (a Redis outage, a stale lock broken) are JSON lines on standard error,
  // as the service writes them; standard output stays the command's answer.
  const log = loggerOn(createLogger(config.logLevel, process.stderr));
  const store = createStore({ redisUrl: config.redisUrl, keysFile: config.keysFile, cacheMaxEntries: 0, log });
  const keys = new ApiKeys(store);
  const { positionals, values } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [command, target, amount] = positionals;
  try {
    switch (command) {
      case 'create': {
        const { key, record } = await keys.create(target ?? 'unnamed', {
          credits: count(values.credits, 'credits') ?? null, rpm: count(values.rpm, 'rpm') ?? null, tpm: count(values.tpm, 'tpm') ?? null,
        });
        console.log(`created ${record.id} (${record.name}); the key is shown once:\n${key}`);
        return 0;
      }
      case 'list':
        for (const k of await keys.list()) {
          const state = k.revokedAt ? `revoked ${k.revokedAt}` : 'live';
          console.log([k.id, k.name, state, `credits ${k.credits ?? 'unlimited'}`, `rpm ${k.rpm ?? '-'}`, `tpm ${k.tpm ?? '-'}`, `created ${k.createdAt}`].join('\t'));
        }
        return 0;
      case 'revoke':
        if (!target) break;
        if (!(await keys.revoke(target))) return fail(`no live key with id ${target}`);
        console.log(`revoked ${target}`);
        return 0;
      case 'credit': {
        const n = count(amount, 'credit');
        if (!target || typeof n !== 'number') break;
        if ((await store.credits(target)) === undefined) return fail(`no key with id ${target}`);
        if ((await store.credits(target)) === null) await store.setCredits(target, 0);
        console.log(`${target}: balance ${await store.addCredits(target, n)}`);
        return 0;
      }
      case 'limits': {
        if (!target) break;
        const limits = { ...(values.rpm !== undefined ? { rpm: count(values.rpm, 'rpm')! } : {}), ...(values.tpm !== undefined ? { tpm: count(values.tpm, 'tpm')! } : {}) };
        if (!(await store.setKeyLimits(target, limits))) return fail(`no key with id ${target}`);
        console.log(`${target}: limits ${JSON.stringify(limits)}`);
        return 0;
      }
      case 'unlimited':
        if (!target) break;
        if (!(await store.setCredits(target, null))) return fail(`no key with id ${target}`);
        console.log(`${target}: unlimited`);
        return 0;
      case 'ensure-dev': {
        if ((await keys.list()).some((k) => k.revokedAt === null)) {
          console.log(`API keys live in ${config.redisUrl ? 'Redis' : config.keysFile} (list them: npm run keys -- list).`);
          return 0;
        }
        const { key, record } = await keys.create('development');
        console.log(`First start: created the development key ${record.id}, shown once:\n\n    ${key}\n`);
        return 0;
      }
    }
    console.error(USAGE);
    return 2;
  } finally {
    await store.close();
  }
}

function fail(message: string): number {
  console.error(message);
  return 1;
}

main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: Error) => {
  // A keys file that can never be written is a setting to fix, said as the server says those.
  const setting = err instanceof ConfigError ? err.message
    : err instanceof StoreUnavailableError && err.code === 'keys_folder_unavailable' ? `KEYS_FILE: ${err.message}` : undefined;
  if (setting !== undefined) {
    console.error(`Configuration error: ${setting}`);
    process.exitCode = 2;
    return;
  }
  console.error(`keys: ${err.message}`);
  process.exitCode = 1;
});
