import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { KeyStore } from './key-store.ts';

const newFile = () => join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json');

/** Writes as an editor would, with an mtime of its own so the store cannot miss the change. */
const writeAt = (file: string, text: string, second: number) => {
  writeFileSync(file, text);
  utimesSync(file, second, second);
};

const quietLog = () => {
  const warnings: unknown[][] = [];
  return { warnings, log: { warn: (...args: unknown[]) => void warnings.push(args) } };
};

describe('KeyStore', () => {
  it('stores only a hash of each key', () => {
    const file = newFile();
    const { key } = new KeyStore(file).create('ci');
    const stored = readFileSync(file, 'utf8');
    assert.doesNotMatch(stored, new RegExp(key.slice('sk-service-'.length)));
    assert.match(stored, /"hash": "[0-9a-f]{64}"/);
  });

  it('verifies live keys, rejects others and revoked ones', () => {
    const store = new KeyStore(newFile());
    const { key, record } = store.create('a');
    assert.equal(store.verify(key), true);
    assert.equal(store.verify(key + 'x'), false);
    assert.equal(store.revoke(record.id), true);
    assert.equal(store.verify(key), false);
    assert.equal(store.revoke(record.id), false, 'a key is revoked once');
  });

  it('sees keys another process wrote, as the CLI does while the server runs', () => {
    const file = newFile();
    const server = new KeyStore(file);
    assert.equal(server.list().length, 0);
    const { key } = new KeyStore(file).create('from the CLI');
    assert.equal(server.verify(key), true);
  });

  it('accepts a key given at start without storing it', () => {
    const file = newFile();
    const store = new KeyStore(file, ['env-key']);
    assert.equal(store.verify('env-key'), true);
    assert.deepEqual(store.list(), []);
  });

  describe('a keys file that cannot be read as keys', () => {
    const broken: [string, string][] = [
      ['malformed JSON', '[{"id": "key_1",'],
      ['not an array', '{"keys": []}'],
      ['an entry without a hash', '[{"id": "key_1", "name": "a", "createdAt": "2024-01-01T00:00:00Z", "revokedAt": null}]'],
      ['an id that is not a string', '[{"id": 1, "name": "a", "hash": "00", "createdAt": "x", "revokedAt": null}]'],
    ];
    for (const [name, text] of broken) {
      it(`keeps the last good keys and the key given at start when the file holds ${name}`, () => {
        const file = newFile();
        const { log } = quietLog();
        const store = new KeyStore(file, ['env-key'], { log });
        const { key } = store.create('good');
        writeAt(file, text, 1_000);
        assert.equal(store.verify(key), true);
        assert.equal(store.verify('env-key'), true);
        assert.equal(store.list().length, 1);
        assert.match(store.problem() ?? '', /keys\.json/);
      });
    }

    it('logs once per change of the file, and clears the problem when the file is fixed', () => {
      const file = newFile();
      const { warnings, log } = quietLog();
      const store = new KeyStore(file, [], { log });
      const { key } = store.create('good');
      const good = readFileSync(file, 'utf8');
      writeAt(file, 'garbage', 1_000);
      store.verify(key);
      store.verify(key);
      assert.equal(warnings.length, 1, 'one bad change, one warning');
      writeAt(file, '{"other": "garbage"}', 2_000);
      store.verify(key);
      store.verify(key);
      assert.equal(warnings.length, 2, 'a second bad change, a second warning');
      writeAt(file, good, 3_000);
      assert.equal(store.verify(key), true);
      assert.equal(store.problem(), undefined);
      assert.equal(warnings.length, 2);
      writeAt(file, 'garbage', 4_000);
      assert.ok(store.problem());
      rmSync(file);
      assert.equal(store.problem(), undefined, 'no file is no keys, not a broken file');
    });

    it('refuses to write over it, so a broken file is never replaced by the keys read before it', () => {
      const file = newFile();
      const store = new KeyStore(file, [], quietLog());
      store.create('good');
      writeAt(file, 'garbage', 1_000);
      assert.throws(() => store.create('another'), /keys\.json/);
      assert.equal(readFileSync(file, 'utf8'), 'garbage');
    });
  });
});
