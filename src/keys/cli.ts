// API key administration: create, list, revoke, and ensure-dev (used by `make run`).
import { loadConfig } from '../config.ts';
import { KeyStore } from './key-store.ts';

const USAGE = `usage: keys create [name] | keys list | keys revoke <id> | keys ensure-dev`;

function main(argv: string[]): number {
  const config = loadConfig(process.env);
  const store = new KeyStore(config.keysFile);
  const [command, arg] = argv;
  switch (command) {
    case 'create': {
      const { key, record } = store.create(arg ?? 'unnamed');
      console.log(`created ${record.id} (${record.name}); the key is shown once:\n${key}`);
      return 0;
    }
    case 'list':
      for (const k of store.list()) {
        console.log(`${k.id}\t${k.name}\tcreated ${k.createdAt}\t${k.revokedAt ? `revoked ${k.revokedAt}` : 'live'}`);
      }
      return 0;
    case 'revoke':
      if (!arg) break;
      if (!store.revoke(arg)) {
        console.error(`no live key with id ${arg}`);
        return 1;
      }
      console.log(`revoked ${arg}`);
      return 0;
    case 'ensure-dev': {
      if (store.list().some((k) => k.revokedAt === null)) {
        console.log(`API keys live in ${config.keysFile} (list them: npm run keys -- list).`);
        return 0;
      }
      const { key, record } = store.create('development');
      console.log(`First start: created the development key ${record.id}, shown once:\n\n    ${key}\n`);
      return 0;
    }
  }
  console.error(USAGE);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
