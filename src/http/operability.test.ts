// The operators' view of the service, through HTTP: the request log, the metrics, health and
// readiness, and CORS for browser apps (issue 11).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { Guard } from '../guard/guard.ts';
import { scriptedTextScorer } from '../guard/scripted-text-scorer.ts';
import { hello, postCompletion, startTestServer, TEST_KEY, type TestServer } from '../testing/test-server.ts';
import { createEmbeddedStore } from '../store/embedded-store.ts';
import { createRedisStore } from '../store/redis-store.ts';
import { Readiness } from './health.ts';
import { Metrics } from './metrics.ts';
import { createLogger, loggerOn } from '../logging.ts';

/** A scripted classifier (tests only): "KILL" is S1. */
const scriptedScorer = scriptedTextScorer((text) => (text.includes('KILL') ? { S1: 0.99 } : {}));

/** The log's lines, parsed, as the logger writes them. */
function logLines() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  return { lines, raw, logger: createLogger('info', destination) };
}

const base = (server: TestServer) => server.baseUrl.replace(/\/v1$/, '');
const settle = () => new Promise((r) => setTimeout(r, 50)); // the log line is written when the response closes

describe('the request log', () => {
  const log = logLines();
  let server: TestServer;
  before(async () => (server = await startTestServer({ requestLogger: log.logger, engine: createScriptedEngine(echoScript) })));
  after(() => server.close());

  it('writes one JSON line per request with its id, key, status, latency, engine, cache, time to first token and tokens', async () => {
    const res = await postCompletion(server.baseUrl, { ...hello, messages: [{ role: 'user', content: 'the secret word is papaya' }] });
    assert.equal(res.status, 200);
    await res.text();
    await settle();
    const line = log.lines.find((l) => l.reqId === res.headers.get('x-request-id'));
    assert.ok(line, JSON.stringify(log.lines));
    assert.equal(line.keyId, 'env');
    assert.deepEqual(line.res, { status: 200 });
    assert.deepEqual([line.engine, line.cache, line.stream], ['scripted', 'miss', false]);
    assert.ok(typeof line.responseTime === 'number' && typeof line.ttftMs === 'number');
    assert.ok((line.promptTokens as number) > 0 && (line.completionTokens as number) > 0, JSON.stringify(line));
  });

  it('never writes a prompt, an answer or a key, with x-service-zdr or without, and logs errors by code', async () => {
    for (const headers of [{}, { 'x-service-zdr': 'true' }] as Record<string, string>[]) {
      const res = await postCompletion(server.baseUrl, { ...hello, stream: true, messages: [{ role: 'user', content: 'tell nobody: mango-7731' }] }, headers);
      await res.text();
    }
    const refused = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', headers: { Authorization: 'Bearer sk-wrong-key-4417' } });
    assert.equal(refused.status, 401);
    await settle();
    const all = log.raw.join('\n');
    for (const secret of ['mango-7731', TEST_KEY, 'sk-wrong-key-4417']) assert.ok(!all.includes(secret), `${secret} is in the log`);
    const line = log.lines.find((l) => l.reqId === refused.headers.get('x-request-id'))!;
    assert.deepEqual([line.level, line.error], [40, { type: 'authentication_error', code: 'invalid_api_key' }]);
  });

  it('writes its line without making a logger per request (each child logger serialises its bindings: CPU on every request)', async () => {
    let children = 0;
    const child = log.logger.child.bind(log.logger);
    log.logger.child = ((...args: Parameters<typeof child>) => (children++, child(...args))) as typeof log.logger.child;
    try {
      const before = log.lines.length;
      const res = await postCompletion(server.baseUrl, hello);
      await res.text();
      await settle();
      assert.equal(log.lines.length, before + 1);
      assert.equal(children, 0);
    } finally {
      log.logger.child = child;
    }
  });
});

describe('GET /metrics', () => {
  const metrics = new Metrics();
  let server: TestServer;
  before(async () => (server = await startTestServer({
    metrics, guard: new Guard(scriptedScorer), quota: { prices: { prompt: 1, completion: 1 }, defaults: { rpm: null, tpm: null } },
  })));
  after(() => server.close());

  const scrape = async () => {
    const res = await fetch(`${base(server)}/metrics`); // no key
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/plain/);
    return res.text();
  };
  const value = (text: string, series: string) =>
    Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.slice(series.length + 1) ?? 0);

  it('counts requests by status and code, tokens, cache lookups, guard blocks, and times them', async () => {
    const before = await scrape();
    await (await postCompletion(server.baseUrl, hello)).text();
    await (await postCompletion(server.baseUrl, hello)).text(); // the same again: a cache hit
    await (await postCompletion(server.baseUrl, { ...hello, messages: [{ role: 'system', content: '<guard>S1</guard>' }, { role: 'user', content: 'KILL him' }] })).text();
    await (await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST' })).text();
    await settle();
    const now = await scrape();
    const grew = (series: string) => value(now, series) - value(before, series);
    assert.equal(grew('service_requests_total{status="200",code=""}'), 3);
    assert.equal(grew('service_requests_total{status="401",code="missing_api_key"}') + grew('service_requests_total{status="401",code="invalid_api_key"}'), 1);
    assert.equal(grew('service_cache_requests_total{result="hit"}'), 1);
    assert.equal(grew('service_guard_blocks_total{code="S1"}'), 1);
    assert.ok(grew('service_tokens_total{kind="completion"}') > 0);
    assert.equal(grew('service_request_duration_seconds_count{stream="false"}'), 4);
    assert.match(now, /^service_queue_waiting /m);
    assert.match(now, /^process_cpu_seconds_total /m);
  });

  it('counts credit refusals', async () => {
    const key = await server.keys.create('broke', { credits: 0 });
    const before = value(await scrape(), 'service_refusals_total{reason="credits"}');
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST', headers: { Authorization: `Bearer ${key.key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(hello),
    });
    assert.equal(res.status, 402);
    await settle();
    assert.equal(value(await scrape(), 'service_refusals_total{reason="credits"}') - before, 1);
  });
});

describe('GET /healthz and /readyz', () => {
  let healthy = true;
  const readiness = new Readiness({ store: async () => { if (!healthy) throw new Error('store down'); } });
  let server: TestServer;
  before(async () => (server = await startTestServer({ readiness })));
  after(() => server.close());
  const get = async (path: string) => {
    const res = await fetch(`${base(server)}${path}`); // no key
    return { status: res.status, body: await res.json() };
  };

  it('answers alive at once, and ready only once started, while the store answers, and until draining', async () => {
    assert.deepEqual(await get('/healthz'), { status: 200, body: { status: 'ok' } });
    assert.deepEqual(await get('/readyz'), { status: 503, body: { status: 'starting', checks: { store: 'ok' } } });
    readiness.started();
    assert.deepEqual(await get('/readyz'), { status: 200, body: { status: 'ready', checks: { store: 'ok' } } });
    healthy = false;
    assert.deepEqual(await get('/readyz'), { status: 503, body: { status: 'unready', checks: { store: 'failing' } } });
    healthy = true;
    readiness.draining();
    assert.deepEqual(await get('/readyz'), { status: 503, body: { status: 'draining', checks: { store: 'ok' } } });
    assert.deepEqual(await get('/healthz'), { status: 200, body: { status: 'ok' } });
  });
});

describe('GET /readyz needs no key, so it says nothing of the store but ok or failing (issue 21, finding 9)', () => {
  const log = { warn: (...args: unknown[]) => void warned.push(args.join(' ')), error: () => {} };
  const warned: string[] = [];
  // Nothing listens on 8131 (this suite's own port range): the store cannot be reached.
  const store = createRedisStore({ url: 'redis://opsuser:s3cret@127.0.0.1:8131/7', log });
  const readiness = new Readiness({ store: () => store.ping() }, log);
  readiness.started();
  let server: TestServer;
  before(async () => (server = await startTestServer({ readiness })));
  after(async () => { await server.close(); await store.close(); });

  it('answers 503 unready without the host, port, user or database, and logs the cause once', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${base(server)}/readyz`);
      const text = await res.text();
      assert.equal(res.status, 503);
      assert.deepEqual(JSON.parse(text), { status: 'unready', checks: { store: 'failing' } });
      for (const secret of ['127.0.0.1', '8131', 'opsuser', 's3cret', 'redis', '/7']) assert.ok(!text.includes(secret), `${secret} in ${text}`);
    }
    assert.equal(warned.filter((w) => /readiness check store failing: .*127\.0\.0\.1:8131/.test(w)).length, 1, warned.join('\n'));
  });
});

describe('Readiness logs a failing check', () => {
  // The Redis client words one outage differently from poll to poll; the CI run of 27 November saw
  // "max retries per request" and then "connection reconnecting", and logged the outage twice.
  it('once when it starts failing, whatever its message at each poll, and again after it recovers', async () => {
    const warned: string[] = [];
    let poll = 0;
    let down = true;
    const readiness = new Readiness({ store: async () => { poll += 1; if (down) throw new Error(`down, attempt ${poll}`); } },
      { warn: (...args: unknown[]) => void warned.push(args.join(' ')), error: () => {} });
    readiness.started();
    for (let i = 0; i < 3; i++) assert.equal((await readiness.report()).checks.store, 'failing');
    assert.deepEqual(warned, ['readiness check store failing: down, attempt 1']);
    down = false;
    assert.equal((await readiness.report()).checks.store, 'ok');
    down = true;
    await readiness.report();
    assert.deepEqual(warned, ['readiness check store failing: down, attempt 1', 'readiness check store failing: down, attempt 5']);
  });
});

describe('CORS', () => {
  let open: TestServer;
  let closed: TestServer;
  before(async () => {
    open = await startTestServer({ corsOrigins: ['https://app.example.com'] });
    closed = await startTestServer();
  });
  after(() => Promise.all([open.close(), closed.close()]));
  const preflight = (server: TestServer, origin: string) => fetch(`${server.baseUrl}/chat/completions`, {
    method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' },
  });

  it('answers a listed origin\'s preflight before authentication, and lets it read the request id', async () => {
    const res = await preflight(open, 'https://app.example.com');
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(res.headers.get('access-control-allow-headers')!, /authorization/);
    const answer = await postCompletion(open.baseUrl, hello, { Origin: 'https://app.example.com' });
    assert.equal(answer.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(answer.headers.get('access-control-expose-headers')!, /x-request-id/);
  });

  it('gives an unlisted origin no CORS headers, and adds none where CORS_ORIGINS is unset', async () => {
    assert.equal((await preflight(open, 'https://evil.example')).headers.get('access-control-allow-origin'), null);
    const res = await preflight(closed, 'https://app.example.com');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
  });
});

describe('a line a request\'s own work writes', () => {
  const log = logLines();
  let server: TestServer;
  before(async () => {
    // The embedded store, but its cache refuses to store: the cache stage warns, and the request is answered.
    const keysFile = join(mkdtempSync(join(tmpdir(), 'scope-')), 'keys.json');
    const store = createEmbeddedStore({ file: keysFile, cacheMaxEntries: 10, log: loggerOn(log.logger) });
    store.cacheSet = async () => { throw new Error('disk says no'); };
    server = await startTestServer({ store, log: loggerOn(log.logger), engine: createScriptedEngine(echoScript) });
  });
  after(() => server.close());

  it('names that request and its key, and only that one, however many are in flight', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `scoped-${i}`);
    const answers = await Promise.all(ids.map((id, i) => postCompletion(server.baseUrl,
      { model: 'service', messages: [{ role: 'user', content: `question ${i}` }] }, { 'x-request-id': id })));
    assert.deepEqual(answers.map((r) => r.status), ids.map(() => 200));
    await settle();
    for (const [i, id] of ids.entries()) {
      const lines = log.lines.filter((l) => /cache store failed: disk says no/.test(String(l.msg)) && l.reqId === id);
      assert.equal(lines.length, 1, `request ${i}: ${JSON.stringify(log.lines)}`);
      assert.equal(lines[0]!.keyId, 'env', 'the line names the caller\'s key id');
    }
    assert.equal(log.lines.filter((l) => /cache store failed/.test(String(l.msg))).length, ids.length);
  });
});

describe('a store outage during a request (issue 20, part 3)', () => {
  const log = logLines();
  let server: TestServer;
  let store: ReturnType<typeof createRedisStore>;
  before(async () => {
    // A port nothing listens on: every store call of the request fails as an outage.
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    store = createRedisStore({ url: `redis://127.0.0.1:${closed}`, log: loggerOn(log.logger) });
    server = await startTestServer({
      store, log: loggerOn(log.logger), requestLogger: log.logger,
      quota: { prices: { prompt: 1, completion: 1 }, defaults: { rpm: null, tpm: null } },
    });
  });
  after(async () => (await server.close(), await store.close()));

  it('is written to the JSON log with the request id and key id of the request it failed', async () => {
    const res = await postCompletion(server.baseUrl, hello, { 'x-request-id': 'outage-1' });
    assert.equal(res.status, 503);
    await settle();
    const line = log.lines.find((l) => l.reqId === 'outage-1' && /Redis at/.test(JSON.stringify(l)));
    assert.ok(line, JSON.stringify(log.lines));
    assert.ok(line.keyId, 'the line names the caller\'s key id');
    assert.doesNotMatch(log.raw.join('\n'), /\[outage-1\]/, 'the request id is a field, not a prefix');
  });
});
