import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScriptedEngine, echoScript } from '../../engines/scripted-engine.ts';
import { countingEngine } from '../../testing/counting-engine.ts';
import { hello, postCompletion, startTestServer } from '../../testing/test-server.ts';
import { duration } from './quota.ts';

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
