import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScriptedEngine, echoScript } from '../../engines/scripted-engine.ts';
import { countingEngine } from '../../testing/counting-engine.ts';
import { hello, postCompletion, startTestServer } from '../../testing/test-server.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeys } from '../../keys/api-keys.ts';
import { createLogger } from '../../logging.ts';
import { createEmbeddedStore } from '../../store/embedded-store.ts';
import { testAttachmentLimits } from '../../testing/attachment-limits.ts';
import { createRequestContext } from '../request-context.ts';
import { duration, quota } from './quota.ts';
import { withQueue } from '../../engines/queued-engine.ts';
import { Guard } from '../../guard/guard.ts';
import { scriptedTextScorer } from '../../guard/scripted-text-scorer.ts';
import { Drain } from '../../http/drain.ts';
import { Metrics } from '../../http/metrics.ts';
import { gate, heldEngine, openRequests, until } from '../../testing/gates.ts';

// One credit per completion token, prompts free: a request's cost is its answer's length in words.
const prices = { prompt: 0, completion: 1000 };
const ask = (content: string, extra: object = {}) => ({ ...hello, ...extra, messages: [{ role: 'user', content }] });

async function serverWith(limits: { rpm?: number | null; tpm?: number | null } = {}, engine = createScriptedEngine(echoScript)) {
  return startTestServer({ engine, quota: { prices, defaults: { rpm: limits.rpm ?? null, tpm: limits.tpm ?? null } } });
}

describe('credits', () => {
  it('reserves the most a request can cost, settles the real cost, and answers 402 before any work when the balance cannot cover it', async () => {
    const counting = countingEngine(createScriptedEngine(echoScript));
    const server = await serverWith({}, counting.engine);
    try {
      const { key, record } = await server.keys.create('metered', { credits: 10 });
      const auth = { Authorization: `Bearer ${key}` };
      const res = await postCompletion(server.baseUrl, ask('a b c', { max_tokens: 5 }), auth);
      assert.equal(res.status, 200);
      assert.equal(await server.store.credits(record.id), 7, '5 reserved, 3 spent, 2 given back');
      const before = counting.produced();
      const refused = await postCompletion(server.baseUrl, ask('d e f g h i j k', { max_tokens: 8 }), auth);
      assert.equal(refused.status, 402);
      const body = (await refused.json()) as { error: { type: string; code: string; message: string } };
      assert.deepEqual([body.error.type, body.error.code], ['insufficient_quota', 'insufficient_quota']);
      assert.match(body.error.message, /balance is 7/);
      assert.equal(counting.produced(), before, 'the engine ran for a refused request');
      assert.equal(await server.store.credits(record.id), 7);
    } finally {
      await server.close();
    }
  });

  it('charges nothing for a cache hit', async () => {
    const server = await serverWith();
    try {
      const { key, record } = await server.keys.create('metered', { credits: 100 });
      const auth = { Authorization: `Bearer ${key}` };
      await postCompletion(server.baseUrl, ask('x y', { max_tokens: 4 }), auth);
      assert.equal(await server.store.credits(record.id), 98);
      const hit = (await (await postCompletion(server.baseUrl, ask('x y', { max_tokens: 4 }), auth)).json()) as { vcache: boolean };
      assert.equal(hit.vcache, true);
      assert.equal(await server.store.credits(record.id), 98);
    } finally {
      await server.close();
    }
  });

  it('is exact under concurrency: a balance for 10 requests serves 10 of 200 at once and ends at exactly 0', async () => {
    const server = await serverWith({}, createScriptedEngine(echoScript, 2));
    try {
      const { key, record } = await server.keys.create('exact', { credits: 50 });
      const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
      const statuses = await Promise.all(Array.from({ length: 200 }, () =>
        postCompletion(server.baseUrl, ask('one two three four five', { max_tokens: 5 }), auth).then(async (r) => (await r.arrayBuffer(), r.status))));
      assert.equal(statuses.filter((s) => s === 200).length, 10);
      assert.equal(statuses.filter((s) => s === 402).length, 190);
      assert.equal(await server.store.credits(record.id), 0);
    } finally {
      await server.close();
    }
  });
});

// Issue 21, finding 3: a request whose caller left before it reached the generation queue never
// ended, and its reservation stayed held; so did one whose events were closed before they started.
describe('settlement on every path', { timeout: 120_000 }, () => {
  /** A guard whose input check waits at `checking` (a slow stage before generation), and passes. */
  const slowGuard = (checking: ReturnType<typeof gate>): Guard => new Guard(scriptedTextScorer(undefined, () => checking.passed()));
  const guarded = (content: string) => ({ ...hello, max_tokens: 5, messages: [{ role: 'system', content: '<guard>S1</guard>' }, { role: 'user', content }] });

  it('settles the reservation of a caller who left before its turn for the busy slot, and the slot serves on', async () => {
    const slot = gate();
    const checking = gate();
    const metrics = new Metrics();
    let queued = 0;
    const engine = withQueue(heldEngine(createScriptedEngine(echoScript), slot), {
      concurrency: 1, maxWaiting: 5, observer: { waiting: (n) => void (queued = n), waited: () => {} },
    });
    const server = await startTestServer({ engine, guard: slowGuard(checking), metrics, quota: { prices, defaults: { rpm: null, tpm: null } } });
    try {
      const { key, record } = await server.keys.create('leaver', { credits: 100 });
      const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
      const busy = postCompletion(server.baseUrl, ask('a b c', { max_tokens: 5 }), auth);
      await until(() => slot.arrived() === 1);
      const leaving = new AbortController();
      const left = fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', signal: leaving.signal, body: JSON.stringify(guarded('d e f g')),
        headers: { ...auth, 'Content-Type': 'application/json' },
      }).catch(() => 'left');
      await until(() => checking.arrived() === 1);
      leaving.abort();
      assert.equal(await left, 'left');
      checking.open(); // the guard passes; the request goes on to the queue with its caller gone
      // It waits in the queue (as it did, for ever) or has ended; either way, only then the slot frees.
      await until(async () => queued === 1 || (await openRequests(metrics)) === 1);
      slot.open();
      assert.equal((await busy).status, 200);
      await until(async () => (await openRequests(metrics)) === 0);
      assert.equal(await server.store.credits(record.id), 97, '3 for the answer; the leaver\'s 5 given back');
      assert.equal((await postCompletion(server.baseUrl, ask('h i', { max_tokens: 5 }), auth)).status, 200);
      assert.equal(await server.store.credits(record.id), 95);
    } finally {
      await server.close();
    }
  });

  it('settles the reservation of a request whose answer is closed by a shutdown before it started', async () => {
    const checking = gate();
    const metrics = new Metrics();
    const drain = new Drain();
    const server = await startTestServer({ guard: slowGuard(checking), metrics, drain, quota: { prices, defaults: { rpm: null, tpm: null } } });
    try {
      const { key, record } = await server.keys.create('late', { credits: 100 });
      const pending = postCompletion(server.baseUrl, guarded('d e f g'), { Authorization: `Bearer ${key}` });
      await until(() => checking.arrived() === 1);
      const draining = drain.drain(0); // the grace period is over: the request's answer will be ended
      await until(async () => (await openRequests(metrics)) === 1 && drain.size === 1);
      await new Promise((r) => setTimeout(r, 10));
      checking.open();
      const res = await pending;
      const body = (await res.json()) as { error: { code: string } };
      assert.deepEqual([res.status, body.error.code], [503, 'shutting_down']);
      await draining;
      await until(async () => (await openRequests(metrics)) === 0);
      assert.equal(await server.store.credits(record.id), 100, 'nothing generated, nothing charged');
    } finally {
      await server.close();
    }
  });
});

describe('rate limits', () => {
  it('admits a key\'s requests per minute, then answers 429 with an honest Retry-After and the x-ratelimit headers', async () => {
    const server = await serverWith();
    try {
      const { key } = await server.keys.create('limited', { rpm: 3 });
      const auth = { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' };
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await postCompletion(server.baseUrl, ask(`question ${i}`), auth));
      assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 429, 429]);
      assert.equal(answers[0]!.headers.get('x-ratelimit-limit-requests'), '3');
      assert.deepEqual(answers.slice(0, 3).map((r) => r.headers.get('x-ratelimit-remaining-requests')), ['2', '1', '0']);
      assert.match(answers[0]!.headers.get('x-ratelimit-reset-requests') ?? '', /^\d+(ms|s)$|^\d+m\d+s$/);
      const body = (await answers[3]!.json()) as { error: { type: string; code: string } };
      assert.deepEqual([body.error.type, body.error.code], ['rate_limit_error', 'rate_limit_exceeded']);
      const retryAfter = Number(answers[3]!.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 20, `Retry-After ${retryAfter} for 3 per minute`);
      // A key without limits of its own, and no service-wide default: no headers, no limit.
      const free = await postCompletion(server.baseUrl, ask('free'));
      assert.equal(free.headers.get('x-ratelimit-limit-requests'), null);
    } finally {
      await server.close();
    }
  });

  it('counts tokens per minute: the prompt at admission and the answer once generated', async () => {
    const server = await serverWith({ tpm: 60 });
    try {
      const auth = { 'x-service-bypass-cache': 'true' };
      const first = await postCompletion(server.baseUrl, ask('w '.repeat(40)), auth);
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('x-ratelimit-limit-tokens'), '60');
      const second = await postCompletion(server.baseUrl, ask('w '.repeat(40)), auth);
      assert.equal(second.status, 429, 'the first answer\'s tokens were not counted');
    } finally {
      await server.close();
    }
  });

  it('formats durations as clients read them', () => {
    assert.deepEqual([duration(250), duration(1000), duration(1500), duration(60_000), duration(361_000)], ['250ms', '1s', '2s', '1m0s', '6m1s']);
  });
});

describe('credits for a cached answer', () => {
  it('charges nothing for a cache hit its client leaves, whatever the later stages had metered (an answer started ahead and dropped)', async () => {
    const store = createEmbeddedStore({ file: join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json'), cacheMaxEntries: 10 });
    const { record } = await new ApiKeys(store, []).create('left', { credits: 1_000_000 });
    const ctx = createRequestContext({
      requestId: 'r1', caller: { keyId: record.id, name: 'left', rpm: null, tpm: null }, headers: {}, zdr: false,
      body: { model: 'service', max_tokens: 8, messages: [{ role: 'user', content: 'p2' }] }, signal: new AbortController().signal,
    }, { log: createLogger('error'), attachmentLimits: testAttachmentLimits() });
    const stage = quota(store, { prices: { prompt: 1000, completion: 1000 }, defaults: { rpm: null, tpm: null } });
    const answer = await stage(ctx, async (inner) => {
      // A later stage metered a generation that began (and said something) before the hit was known.
      inner.meter!.generation = { prompt: 'p2', started: true, text: 'Lyon and more words' };
      async function* replay() {
        yield { type: 'content' as const, text: 'Paris' };
        yield { type: 'done' as const, finishReason: 'stop' as const, usage: { promptTokens: 1, completionTokens: 1 } };
      }
      return { events: replay(), precontext: [], cached: true };
    });
    const events = answer.events[Symbol.asyncIterator]();
    await events.next(); // the client read the first chunk, then left
    await events.return?.();
    assert.equal(await store.credits(record.id), 1_000_000, 'a hit its client left was charged');
  });
});
