// One contract, two backends: every assertion in `contract` runs against the embedded store and,
// when REDIS_URL is set (scripts/with-redis.sh), against Redis. Then what only one backend has:
// the shared keys file for the embedded one, an unreachable server for Redis.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createStore } from './create-store.ts';
import { createEmbeddedStore } from './embedded-store.ts';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import { DuplicateKeyError } from './errors.ts';
import { createRedisStore } from './redis-store.ts';
import type { KeyRecord, Store } from './store.ts';

const REDIS_URL = process.env.REDIS_URL;
/** Only to catch a hang; no test here measures time. */
const HANG = { timeout: 180_000 };

const quietLog = () => {
  const warnings: string[] = [];
  return { warnings, log: { warn: (...args: unknown[]) => void warnings.push(args.join(' ')) } };
};
/** Every file of this run under one directory, removed at the end. */
const BASE = mkdtempSync(join(tmpdir(), 'store-test-'));
after(() => rmSync(BASE, { recursive: true, force: true }));
const newFile = () => join(mkdtempSync(join(BASE, 'keys-')), 'keys.json');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** A record with its own id and hash. */
const newRecord = (overrides: Partial<KeyRecord> = {}): KeyRecord => {
  const nonce = randomBytes(6).toString('hex');
  return {
    id: `key_${nonce}`,
    name: `test ${nonce}`,
    hash: sha256(`sk-${nonce}`),
    createdAt: '2024-01-01T00:00:00.000Z',
    revokedAt: null,
    rpm: null,
    tpm: null,
    ...overrides,
  };
};

/** Writes as an editor would, with an mtime of its own so no store can miss the change. */
const writeAt = (file: string, text: string, second: number) => {
  writeFileSync(file, text);
  utimesSync(file, second, second);
};

/** The per-entry cache bound every harness's stores get (CACHE_MAX_ENTRY_BYTES). */
const ENTRY_MAX = 1000;
/** A value that makes the entry under `key` exactly `bytes` long (key and value as UTF-8). */
const valueOfSize = (key: string, bytes: number) => 'é'.repeat(Math.floor((bytes - key.length) / 2)) + 'x'.repeat((bytes - key.length) % 2);

interface Harness {
  store: Store;
  /** More instances over the same state, as other processes or servers would have. */
  more(count: number): Store[];
  /** Moves the clock the cache's TTLs run on. */
  advanceCacheClock(ms: number): Promise<void>;
  close(): Promise<void>;
}

interface Backend {
  name: string;
  skip: string | false;
  open(): Promise<Harness>;
}

const embedded: Backend = {
  name: 'embedded backend',
  skip: false,
  async open() {
    const file = newFile();
    let now = Date.now();
    const make = () => createEmbeddedStore({ file, cacheMaxEntries: 100, cacheMaxEntryBytes: ENTRY_MAX, log: quietLog().log, now: () => now });
    return {
      store: make(),
      more: (count) => Array.from({ length: count }, make),
      advanceCacheClock: async (ms) => {
        now += ms;
      },
      close: async () => {},
    };
  },
};

const redis: Backend = {
  name: 'redis backend',
  skip: REDIS_URL ? false : 'REDIS_URL is not set; run: scripts/with-redis.sh 6390 node --import tsx --test src/store/store.test.ts',
  async open() {
    const url = REDIS_URL ?? '';
    // Its own prefix per harness, so runs and tests never see each other's keys.
    const keyPrefix = `store-test:${randomBytes(6).toString('hex')}:`;
    const opened: Store[] = [];
    const make = () => {
      const store = createRedisStore({ url, keyPrefix, cacheMaxEntryBytes: ENTRY_MAX, log: quietLog().log });
      opened.push(store);
      return store;
    };
    return {
      store: make(),
      more: (count) => Array.from({ length: count }, make),
      // Redis expires on its own clock.
      advanceCacheClock: async (ms) => {
        await sleep(ms);
      },
      async close() {
        await Promise.all(opened.map((s) => s.close()));
        const admin = new Redis(url);
        try {
          const stale = await admin.keys(`${keyPrefix}*`);
          if (stale.length > 0) await admin.del(...stale);
        } finally {
          admin.disconnect();
        }
      },
    };
  },
};

for (const backend of [embedded, redis]) {
  describe(backend.name, { skip: backend.skip }, () => contract(backend));
}

function contract(backend: Backend) {
  let h: Harness;
  let store: Store;
  before(async () => {
    h = await backend.open();
    store = h.store;
  });
  after(() => h.close());

  describe('keys', () => {
    it('creates keys, finds them by hash and lists them', async () => {
      const a = newRecord({ createdAt: '2024-01-01T00:00:01.000Z' });
      const b = newRecord({ createdAt: '2024-01-01T00:00:02.000Z', rpm: 60, tpm: 10_000 });
      await store.createKey(a);
      await store.createKey(b);
      assert.deepEqual(await store.keyByHash(a.hash), a);
      assert.deepEqual(await store.keyByHash(b.hash), b);
      assert.equal(await store.keyByHash(sha256('no such key')), undefined);
      const listed = (await store.listKeys()).filter((k) => k.id === a.id || k.id === b.id);
      assert.deepEqual(listed, [a, b]);
    });

    it('refuses a second key with the same id or the same hash', async () => {
      const a = newRecord();
      await store.createKey(a);
      await assert.rejects(store.createKey(newRecord({ id: a.id })), DuplicateKeyError);
      await assert.rejects(store.createKey(newRecord({ hash: a.hash })), DuplicateKeyError);
    });

    it('revokes a live key once, and keeps finding it, revoked', async () => {
      const a = newRecord();
      await store.createKey(a);
      assert.equal(await store.revokeKey(a.id, '2024-02-01T00:00:00.000Z'), true);
      assert.equal((await store.keyByHash(a.hash))?.revokedAt, '2024-02-01T00:00:00.000Z');
      assert.equal(await store.revokeKey(a.id, '2024-03-01T00:00:00.000Z'), false);
      assert.equal((await store.keyByHash(a.hash))?.revokedAt, '2024-02-01T00:00:00.000Z');
      assert.equal(await store.revokeKey('key_nosuch', '2024-02-01T00:00:00.000Z'), false);
    });

    it('sets and clears per-key limits, one at a time', async () => {
      const a = newRecord();
      await store.createKey(a);
      assert.equal(await store.setKeyLimits(a.id, { rpm: 60 }), true);
      assert.deepEqual(await store.keyByHash(a.hash), { ...a, rpm: 60, tpm: null });
      assert.equal(await store.setKeyLimits(a.id, { tpm: 5000 }), true);
      assert.deepEqual(await store.keyByHash(a.hash), { ...a, rpm: 60, tpm: 5000 });
      assert.equal(await store.setKeyLimits(a.id, { rpm: null }), true);
      assert.deepEqual(await store.keyByHash(a.hash), { ...a, rpm: null, tpm: 5000 });
      assert.equal(await store.setKeyLimits('key_nosuch', { rpm: 1 }), false);
      await assert.rejects(store.setKeyLimits(a.id, { rpm: 0 }), RangeError);
    });
  });

  describe('credits', () => {
    it('starts unlimited, sets, adds and clears a balance', async () => {
      const a = newRecord();
      await store.createKey(a);
      assert.equal(await store.credits(a.id), null);
      assert.equal(await store.addCredits(a.id, 5), undefined, 'nothing to add to while unlimited');
      assert.equal(await store.setCredits(a.id, 10), true);
      assert.equal(await store.credits(a.id), 10);
      assert.equal(await store.addCredits(a.id, 5), 15);
      assert.equal(await store.addCredits(a.id, -20), -5, 'a settlement may take a balance below zero');
      assert.equal(await store.credits(a.id), -5);
      assert.equal(await store.setCredits(a.id, null), true);
      assert.equal(await store.credits(a.id), null);
      assert.equal(await store.credits('key_nosuch'), undefined);
      assert.equal(await store.setCredits('key_nosuch', 1), false);
      assert.equal(await store.addCredits('key_nosuch', 1), undefined);
      await assert.rejects(store.setCredits(a.id, 1.5), RangeError);
    });

    it('reserves what the balance covers and nothing else', async () => {
      const a = newRecord();
      await store.createKey(a);
      await store.setCredits(a.id, 10);
      assert.deepEqual(await store.reserveCredits(a.id, 4), { ok: true });
      assert.deepEqual(await store.reserveCredits(a.id, 7), { ok: false, balance: 6 });
      assert.equal(await store.credits(a.id), 6, 'a refusal takes nothing');
      assert.deepEqual(await store.reserveCredits(a.id, 6), { ok: true });
      assert.equal(await store.credits(a.id), 0);
      assert.deepEqual(await store.reserveCredits(a.id, 1), { ok: false, balance: 0 });
      await assert.rejects(store.reserveCredits(a.id, -1), RangeError);
    });

    it('always reserves for an unlimited key, taking nothing', async () => {
      const a = newRecord();
      await store.createKey(a);
      assert.deepEqual(await store.reserveCredits(a.id, 1_000_000), { ok: true });
      assert.equal(await store.credits(a.id), null);
    });

    it('refuses a reservation for an unknown key', async () => {
      assert.deepEqual(await store.reserveCredits('key_nosuch', 1), { ok: false, balance: 0 });
    });

    it('is exact under concurrency: 200 reservations of 1 from three instances against 10', HANG, async () => {
      const a = newRecord();
      await store.createKey(a);
      await store.setCredits(a.id, 10);
      const instances = [store, ...h.more(2)];
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => instances[i % instances.length]!.reserveCredits(a.id, 1)),
      );
      assert.equal(results.filter((r) => r.ok).length, 10);
      assert.equal(await store.credits(a.id), 0);
      for (const instance of instances) assert.equal(await instance.credits(a.id), 0);
    });
  });

  describe('rate limits (GCRA)', () => {
    const T0 = Date.UTC(2024, 0, 1);

    it('admits exactly the allowance at one instant, then one more after retryAfterMs', async () => {
      const counter = `rpm:${randomBytes(4).toString('hex')}`;
      const decisions = await Promise.all(Array.from({ length: 100 }, () => store.rateLimit(counter, 30, 1, T0)));
      const admitted = decisions.filter((d) => d.allowed);
      const refused = decisions.filter((d) => !d.allowed);
      assert.equal(admitted.length, 30);
      assert.deepEqual(admitted.map((d) => d.remaining).sort((x, y) => y - x), Array.from({ length: 30 }, (_, i) => 29 - i));
      for (const d of refused) {
        assert.ok(d.retryAfterMs > 0, 'a refusal says when to come back');
        assert.equal(d.remaining, 0);
        assert.equal(d.limit, 30);
      }
      for (const d of admitted) assert.equal(d.retryAfterMs, 0);
      const wait = refused[0]!.retryAfterMs;
      assert.equal(wait, 2000, 'one request of 30 a minute frees every 2 s');
      assert.equal((await store.rateLimit(counter, 30, 1, T0 + wait - 1)).allowed, false);
      const later = await store.rateLimit(counter, 30, 1, T0 + wait);
      assert.equal(later.allowed, true);
      assert.equal(later.resetMs, 60_000);
    });

    it('counts tokens: a cost above 1 takes its share of the minute', async () => {
      const counter = `tpm:${randomBytes(4).toString('hex')}`;
      assert.deepEqual(await store.rateLimit(counter, 1000, 600, T0),
        { allowed: true, limit: 1000, remaining: 400, resetMs: 36_000, retryAfterMs: 0 });
      assert.deepEqual(await store.rateLimit(counter, 1000, 500, T0),
        { allowed: false, limit: 1000, remaining: 400, resetMs: 36_000, retryAfterMs: 6_000 });
      assert.deepEqual(await store.rateLimit(counter, 1000, 400, T0),
        { allowed: true, limit: 1000, remaining: 0, resetMs: 60_000, retryAfterMs: 0 });
      assert.equal((await store.rateLimit(counter, 1000, 100, T0 + 5_999)).allowed, false);
      assert.equal((await store.rateLimit(counter, 1000, 100, T0 + 6_000)).allowed, true);
    });

    it('never admits more than a minute holds, and says so', async () => {
      const counter = `tpm:${randomBytes(4).toString('hex')}`;
      const d = await store.rateLimit(counter, 1000, 1001, T0);
      assert.equal(d.allowed, false);
      assert.equal(d.retryAfterMs, Number.POSITIVE_INFINITY);
      assert.equal(d.remaining, 1000);
    });

    it('admits a whole allowance whose interval is not a whole number of ms', async () => {
      const counter = `rpm:${randomBytes(4).toString('hex')}`;
      const decisions = await Promise.all(Array.from({ length: 8 }, () => store.rateLimit(counter, 7, 1, T0)));
      assert.equal(decisions.filter((d) => d.allowed).length, 7);
      const wait = decisions.find((d) => !d.allowed)!.retryAfterMs;
      assert.equal(wait, Math.ceil(60_000 / 7));
      assert.equal((await store.rateLimit(counter, 7, 1, T0 + wait)).allowed, true);
    });

    it('charges units already spent without refusing, and makes later requests wait for them', async () => {
      const counter = `tpm:${randomBytes(4).toString('hex')}`;
      assert.equal((await store.rateLimit(counter, 1000, 1, T0)).allowed, true);
      await store.chargeRate(counter, 1000, 1500, T0);
      const refused = await store.rateLimit(counter, 1000, 1, T0);
      assert.deepEqual(refused, { allowed: false, limit: 1000, remaining: 0, resetMs: 90_060, retryAfterMs: 30_120 });
      assert.equal((await store.rateLimit(counter, 1000, 1, T0 + 30_119)).allowed, false);
      assert.equal((await store.rateLimit(counter, 1000, 1, T0 + 30_120)).allowed, true);
      const fresh = `tpm:${randomBytes(4).toString('hex')}`;
      await store.chargeRate(fresh, 1000, 0, T0);
      assert.equal((await store.rateLimit(fresh, 1000, 1000, T0)).allowed, true, 'charging nothing takes nothing');
    });

    it('forgets a counter once it is back to full', async () => {
      const counter = `rpm:${randomBytes(4).toString('hex')}`;
      for (let i = 0; i < 2; i++) assert.equal((await store.rateLimit(counter, 2, 1, T0)).allowed, true);
      assert.equal((await store.rateLimit(counter, 2, 1, T0)).allowed, false);
      assert.equal((await store.rateLimit(counter, 2, 1, T0 + 60_000)).remaining, 1);
    });
  });

  describe('cache', () => {
    it('gets what was set, the latest value, and nothing after its TTL', async () => {
      const key = `c:${randomBytes(4).toString('hex')}`;
      assert.equal(await store.cacheGet(key), undefined);
      await store.cacheSet(key, 'first', 60);
      assert.equal(await store.cacheGet(key), 'first');
      await store.cacheSet(key, 'second', 1);
      assert.equal(await store.cacheGet(key), 'second');
      await h.advanceCacheClock(1_100);
      assert.equal(await store.cacheGet(key), undefined);
    });

    it('stores an entry of CACHE_MAX_ENTRY_BYTES, never one above it (bytes as UTF-8, not characters)', async () => {
      const at = `c:${randomBytes(4).toString('hex')}`;
      const above = `c:${randomBytes(4).toString('hex')}`;
      assert.equal(Buffer.byteLength(at) + Buffer.byteLength(valueOfSize(at, ENTRY_MAX)), ENTRY_MAX);
      await store.cacheSet(at, valueOfSize(at, ENTRY_MAX), 60);
      assert.equal(await store.cacheGet(at), valueOfSize(at, ENTRY_MAX));
      const tooBig = valueOfSize(above, ENTRY_MAX + 1);
      assert.ok(tooBig.length < ENTRY_MAX, 'fewer characters than bytes');
      await store.cacheSet(above, tooBig, 60);
      assert.equal(await store.cacheGet(above), undefined);
    });
  });

  describe('semantic cache', () => {
    const entry = (id: string) => ({ id, vector: 'AAAAAA==', answerKey: `answer-${id}` });

    it('keeps a semantic key\'s entries in order, up to its bound', async () => {
      const key = `s:${randomBytes(4).toString('hex')}`;
      assert.deepEqual(await store.semanticEntries(key), []);
      for (const id of ['a', 'b', 'c']) await store.semanticAdd(key, entry(id), 2, 60);
      assert.deepEqual(await store.semanticEntries(key), [entry('a'), entry('b')]);
    });

    it('appends every observation made at once, keeps the last ones, and answers each list', HANG, async () => {
      const [list, other] = [`o:${randomBytes(4).toString('hex')}`, `o:${randomBytes(4).toString('hex')}`];
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.observe(list, { s: i / 100, ok: i % 2 === 0 }, 100, 60)));
      const [seen, none] = await store.observations([list, other]);
      assert.equal(seen!.length, 50);
      assert.deepEqual(seen!.filter((o) => o.ok).length, 25);
      assert.deepEqual(none, []);
      for (let i = 0; i < 5; i++) await store.observe(other, { s: 0.5 + i / 10, ok: true }, 3, 60);
      assert.deepEqual((await store.observations([other]))[0]!.map((o) => o.s), [0.7, 0.8, 0.9]);
    });
  });

  it('answers ping', async () => {
    await store.ping();
  });
}

describe('embedded backend only', () => {
  it('drops the least recently used cache entry past its bound', async () => {
    const store = createEmbeddedStore({ file: newFile(), cacheMaxEntries: 2 });
    await store.cacheSet('a', '1', 60);
    await store.cacheSet('b', '2', 60);
    assert.equal(await store.cacheGet('a'), '1');
    await store.cacheSet('c', '3', 60);
    assert.equal(await store.cacheGet('b'), undefined, 'b was the least recently used');
    assert.equal(await store.cacheGet('a'), '1');
    assert.equal(await store.cacheGet('c'), '3');
  });

  it('drops the least recently used entries past CACHE_MAX_BYTES, and never stores one above it', async () => {
    const store = createEmbeddedStore({ file: newFile(), cacheMaxEntries: 100, cacheMaxBytes: 3_000 });
    for (const key of ['a', 'b', 'c']) await store.cacheSet(key, valueOfSize(key, 1_000), 60);
    assert.ok(await store.cacheGet('a'), 'three entries of 1,000 bytes fit in 3,000');
    await store.cacheSet('d', valueOfSize('d', 1_500), 60);
    assert.equal(await store.cacheGet('b'), undefined, 'b was the least recently used');
    assert.equal(await store.cacheGet('c'), undefined, 'c had to go too: 1,500 bytes more');
    assert.ok(await store.cacheGet('a'));
    assert.ok(await store.cacheGet('d'));
    await store.cacheSet('e', valueOfSize('e', 3_001), 60);
    assert.equal(await store.cacheGet('e'), undefined, 'an entry above the whole bound');
    assert.ok(await store.cacheGet('a'), 'an entry that cannot be stored pushes nothing out');
  });

  describe('two stores on one file, as the CLI and the server', () => {
    it('each sees keys and limits the other wrote', async () => {
      const file = newFile();
      const server = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      const cli = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      assert.deepEqual(await server.listKeys(), []);
      const a = newRecord();
      await cli.createKey(a);
      assert.deepEqual(await server.keyByHash(a.hash), a);
      await cli.setKeyLimits(a.id, { rpm: 5 });
      assert.equal((await server.keyByHash(a.hash))?.rpm, 5);
      await server.revokeKey(a.id, '2024-02-01T00:00:00.000Z');
      assert.equal((await cli.listKeys())[0]?.revokedAt, '2024-02-01T00:00:00.000Z');
    });

    it('counts every credit either adds at the same time', HANG, async () => {
      const file = newFile();
      const server = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      const cli = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      const a = newRecord();
      await server.createKey(a);
      await server.setCredits(a.id, 0);
      await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? server : cli).addCredits(a.id, 1)));
      assert.equal(await server.credits(a.id), 100);
      assert.equal(await cli.credits(a.id), 100);
    });

    it('counts every credit another process adds at the same time', HANG, async () => {
      const file = newFile();
      const server = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      const a = newRecord();
      await server.createKey(a);
      await server.setCredits(a.id, 0);
      const moduleUrl = pathToFileURL(fileURLToPath(new URL('./embedded-store.ts', import.meta.url))).href;
      const childCode = `const { createEmbeddedStore } = await import(${JSON.stringify(moduleUrl)});
        const store = createEmbeddedStore({ file: process.argv[1], cacheMaxEntries: 0 });
        await Promise.all(Array.from({ length: 40 }, () => store.addCredits(process.argv[2], 1)));`;
      const child = promisify(execFile)(process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', childCode, file, a.id]);
      // Keep adding until the child is done, so the two really overlap whatever its start-up time.
      let added = 0;
      let childDone = false;
      void child.finally(() => { childDone = true; }).catch(() => undefined);
      while (!childDone || added < 40) {
        await server.addCredits(a.id, 1);
        added += 1;
      }
      await child;
      assert.equal(await server.credits(a.id), added + 40);
    });
  });

  describe('the keys file', () => {
    it('loads a file written before limits and credits existed, as no limits and unlimited', async () => {
      const file = newFile();
      const hash = sha256('old');
      writeFileSync(file, JSON.stringify([{ id: 'key_old', name: 'old', hash, createdAt: '2024-01-01T00:00:00Z', revokedAt: null }]));
      const store = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      assert.deepEqual(await store.keyByHash(hash),
        { id: 'key_old', name: 'old', hash, createdAt: '2024-01-01T00:00:00Z', revokedAt: null, rpm: null, tpm: null });
      assert.equal(await store.credits('key_old'), null);
      assert.deepEqual(await store.reserveCredits('key_old', 5), { ok: true });
    });

    it('stores hashes only, with the new fields, and keeps fields it does not know', async () => {
      const file = newFile();
      writeFileSync(file, JSON.stringify([{ id: 'key_x', name: 'x', hash: sha256('x'), createdAt: 'c', revokedAt: null, note: 'kept' }]));
      const store = createEmbeddedStore({ file, cacheMaxEntries: 0 });
      await store.setCredits('key_x', 3);
      const [entry] = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>[];
      assert.deepEqual(entry, { id: 'key_x', name: 'x', hash: sha256('x'), createdAt: 'c', revokedAt: null, rpm: null, tpm: null, credits: 3, note: 'kept' });
    });

    it('keeps the last good state while the file is malformed, says so once, and refuses to write over it', async () => {
      const file = newFile();
      const { warnings, log } = quietLog();
      const store = createEmbeddedStore({ file, cacheMaxEntries: 0, log });
      const limited = newRecord();
      const unlimited = newRecord();
      await store.createKey(limited);
      await store.createKey(unlimited);
      await store.setCredits(limited.id, 5);

      writeAt(file, '[{"id": "key_1",', 1_000_000);
      assert.deepEqual((await store.listKeys()).map((k) => k.id), [limited.id, unlimited.id]);
      assert.deepEqual(await store.keyByHash(limited.hash), limited);
      assert.equal(await store.credits(limited.id), 5);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /cannot be read as keys/);
      assert.deepEqual(await store.reserveCredits(unlimited.id, 1), { ok: true }, 'unlimited keys need no write');
      await assert.rejects(store.reserveCredits(limited.id, 1),
        (err: unknown) => err instanceof StoreUnavailableError && err.code === 'keys_file_invalid');
      await assert.rejects(store.createKey(newRecord()), StoreUnavailableError);
      assert.equal(readFileSync(file, 'utf8'), '[{"id": "key_1",', 'the broken file is left for its editor');
      await store.listKeys();
      assert.equal(warnings.length, 1, 'one warning per bad version');

      writeAt(file, '{"keys": []}', 1_000_001);
      await store.listKeys();
      assert.equal(warnings.length, 2, 'a new bad version is reported again');

      writeAt(file, JSON.stringify([{ ...limited, credits: 2 }]), 1_000_002);
      assert.deepEqual((await store.listKeys()).map((k) => k.id), [limited.id]);
      assert.equal(await store.credits(limited.id), 2);
      assert.deepEqual(await store.reserveCredits(limited.id, 2), { ok: true });
      assert.equal(await store.credits(limited.id), 0);
    });

    it('takes a missing file as no keys', async () => {
      const store = createEmbeddedStore({ file: newFile(), cacheMaxEntries: 0 });
      assert.deepEqual(await store.listKeys(), []);
      await store.ping();
    });
  });
});

describe('redis backend, unreachable', () => {
  let closedPort: number;
  before(async () => {
    // A port that was just free and is closed again: connections to it are refused.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closedPort = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('rejects ping and every operation rather than waiting for Redis', HANG, async () => {
    const { warnings, log } = quietLog();
    const store = createRedisStore({ url: `redis://127.0.0.1:${closedPort}`, log });
    try {
      const isOutage = (err: unknown) => err instanceof StoreUnavailableError && err.code === 'store_unavailable';
      await assert.rejects(store.ping(), isOutage);
      const a = newRecord();
      await assert.rejects(store.createKey(a), isOutage);
      await assert.rejects(store.keyByHash(a.hash), isOutage);
      await assert.rejects(store.listKeys(), isOutage);
      await assert.rejects(store.reserveCredits(a.id, 1), isOutage);
      await assert.rejects(store.addCredits(a.id, 1), isOutage);
      await assert.rejects(store.rateLimit('rpm:x', 10, 1, Date.now()), isOutage);
      await assert.rejects(store.chargeRate('tpm:x', 10, 1, Date.now()), isOutage);
      await assert.rejects(store.cacheSet('k', 'v', 10), isOutage);
      await assert.rejects(store.cacheGet('k'), isOutage);
      await assert.rejects(store.ping(), isOutage, 'still rejecting while it reconnects');
      assert.equal(warnings.length, 1, 'one warning per outage');
    } finally {
      await store.close();
    }
  });

  it('keeps the password out of its description', async () => {
    const store = createRedisStore({ url: `redis://user:secret@127.0.0.1:${closedPort}`, log: quietLog().log });
    try {
      assert.doesNotMatch(store.description, /secret/);
    } finally {
      await store.close();
    }
  });
});

describe('createStore', () => {
  it('chooses Redis when a URL is given and the keys file otherwise', async () => {
    const file = newFile();
    const local = createStore({ keysFile: file, cacheMaxEntries: 10 });
    assert.match(local.description, /^embedded/);
    const remote = createStore({ redisUrl: 'redis://127.0.0.1:1', keysFile: file, cacheMaxEntries: 10, log: quietLog().log });
    try {
      assert.match(remote.description, /^redis/);
    } finally {
      await remote.close();
    }
  });
});
