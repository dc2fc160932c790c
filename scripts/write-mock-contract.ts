// Writes the contract copy that `make mock` serves (see mockCopy); the argument is its path.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { stringify } from 'yaml';
import { loadContract, mockCopy } from '../src/contract/openapi-document.ts';

const [out = '.cache/openapi.mock.yaml', origin = 'http://127.0.0.1:4010'] = process.argv.slice(2);
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, stringify(mockCopy(loadContract(), origin)));
