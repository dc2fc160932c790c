import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { KeyStore } from './key-store.ts';

const newFile = () => join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json');

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
});
