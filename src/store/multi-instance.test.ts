// Three instances of the service sharing one Redis: credits, rate limits and revocations must be
// exact across them, and a Redis that goes away must give honest answers. The test runs its own
// redis-server (installed by scripts/install-system-packages.sh) on a free loopback port.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { hello, postCompletion, startTestServer, type TestServer } from '../testing/test-server.ts';
import { createRedisStore } from './redis-store.ts';
import type { Store } from './store.ts';

const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

async function startRedis(port: number, dir: string): Promise<ChildProcess> {
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  for (;;) {
    const probe = createRedisStore({ url: `redis://127.0.0.1:${port}`, log: { warn: () => {} } });
    try {
      await probe.ping();
      return redis;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await probe.close();
    }
  }
}

const ask = (content: string, extra: object = {}) => ({ ...hello, ...extra, messages: [{ role: 'user', content }] });

describe('three instances sharing Redis', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  let redis: ChildProcess;
  let url: string;
  let stores: Store[];
  let servers: TestServer[];
  before(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    redis = await startRedis(port, dir);
    stores = [0, 1, 2].map(() => createRedisStore({ url, keyPrefix: 'multi:', log: { warn: () => {} } }));
    // One credit per completion token, prompts free.
    servers = await Promise.all(stores.map((store) => startTestServer({
      store, engine: createScriptedEngine(echoScript, 2),
      quota: { prices: { prompt: 0, completion: 1000 }, defaults: { rpm: null, tpm: null } },
    })));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all(stores.map((s) => s.close()));
    redis.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves exactly 10 of 200 concurrent requests on a balance for 10, and leaves it at exactly 0', async () => {
    const { key, record } = await servers[0]!.keys.create('exact', { credits: 50 });
    const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
    const statuses = await Promise.all(Array.from({ length: 200 }, (_, i) =>
      postCompletion(servers[i % 3]!.baseUrl, ask('one two three four five', { max_tokens: 5 }), auth)
        .then(async (r) => (await r.arrayBuffer(), r.status))));
    assert.equal(statuses.filter((s) => s === 200).length, 10);
    assert.equal(statuses.filter((s) => s === 402).length, 190);
    assert.equal(await stores[1]!.credits(record.id), 0);
  });

  it('admits exactly 30 of a burst of 100 under --rpm 30, with a Retry-After after which a retry succeeds', async () => {
    const { key } = await servers[1]!.keys.create('burst', { rpm: 30 });
    const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) =>
      postCompletion(servers[i % 3]!.baseUrl, ask(`burst ${i}`), auth).then(async (r) => (await r.arrayBuffer(), r))));
    assert.equal(answers.filter((r) => r.status === 200).length, 30);
    const refused = answers.filter((r) => r.status === 429);
    assert.equal(refused.length, 70);
    const wait = Math.min(...refused.map((r) => Number(r.headers.get('retry-after'))));
    assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    await new Promise((r) => setTimeout(r, wait * 1000));
    assert.equal((await postCompletion(servers[2]!.baseUrl, ask('after the wait'), auth)).status, 200);
  });

  it('makes a revocation on one instance hold on the others at once', async () => {
    const { key, record } = await servers[0]!.keys.create('revoked');
    const auth = { Authorization: `Bearer ${key}` };
    assert.equal((await postCompletion(servers[2]!.baseUrl, ask('before'), auth)).status, 200);
    await servers[0]!.keys.revoke(record.id);
    assert.deepEqual(await Promise.all(servers.map(async (s) => (await postCompletion(s.baseUrl, ask('after'), auth)).status)), [401, 401, 401]);
  });

  it('keeps a zero-data-retention request out of Redis and the logs', async () => {
    const secret = `zdr-marker-${Date.now()}`;
    const res = await postCompletion(servers[0]!.baseUrl, ask(`remember ${secret}`), { 'x-service-zdr': 'true' });
    assert.equal(res.status, 200);
    assert.match(await res.text(), new RegExp(secret), 'the answer itself carries it');
    const dump = await redisDump(url);
    assert.doesNotMatch(dump, new RegExp(secret));
    assert.doesNotMatch(JSON.stringify(servers.map((s) => s.logged)), new RegExp(secret));
    // The same request without ZDR is stored: the check above could have failed.
    await (await postCompletion(servers[0]!.baseUrl, ask(`remember ${secret}`))).text();
    assert.match(await redisDump(url), new RegExp(secret));
  });

  // Last: it stops Redis.
  it('answers 503 store_unavailable while Redis is away (never a bogus 401, 402 or 429), and recovers', async () => {
    const { key } = await servers[0]!.keys.create('outage', { credits: 1000, rpm: 1000 });
    const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
    redis.kill('SIGSTOP'); // frozen: connected but silent, the hardest case
    try {
      const answer = await postCompletion(servers[1]!.baseUrl, ask('during', { max_tokens: 5 }), auth);
      const body = (await answer.json()) as { error: { type: string; code: string } };
      assert.equal(answer.status, 503);
      assert.deepEqual([body.error.type, body.error.code], ['service_unavailable', 'store_unavailable']);
      assert.ok(Number(answer.headers.get('retry-after')) >= 1);
    } finally {
      redis.kill('SIGCONT');
    }
    for (let i = 0; ; i++) {
      const again = await postCompletion(servers[1]!.baseUrl, ask('after', { max_tokens: 5 }), auth);
      if (again.status === 200) break;
      assert.ok(i < 100, `still ${again.status} after Redis came back`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });
});

/** Every key and value in the test's Redis, as text. */
async function redisDump(url: string): Promise<string> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url);
  try {
    const keys = await client.keys('*');
    const values = await Promise.all(keys.map(async (k) => {
      const type = await client.type(k);
      if (type === 'string') return client.get(k);
      if (type === 'hash') return JSON.stringify(await client.hgetall(k));
      if (type === 'set') return JSON.stringify(await client.smembers(k));
      return type;
    }));
    return JSON.stringify([keys, values]);
  } finally {
    client.disconnect();
  }
}
