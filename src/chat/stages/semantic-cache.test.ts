import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import { createScriptedEngine, type Script } from '../../engines/scripted-engine.ts';
import type { Store } from '../../store/store.ts';
import { createEmbeddedStore } from '../../store/embedded-store.ts';
import { createRedisStore } from '../../store/redis-store.ts';
import { randomBytes } from 'node:crypto';
import { countingEngine } from '../../testing/counting-engine.ts';
import { postCompletion, startTestServer, type TestServer } from '../../testing/test-server.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Embedder } from '../semantic/embedder.ts';

// The questions lie on one circle, so their similarities are set by their angles: A is the
// cached question, P1 and P2 its paraphrases (similar 0.90 and 0.93), N a near miss (0.96, another answer).
const angle = { A: 0, P1: Math.acos(0.9), P2: Math.acos(0.93), N: -Math.acos(0.96), far: Math.PI / 2 } as const;
type Question = keyof typeof angle;
const answerOf: Record<Question, string> = { A: 'Paris', P1: 'Paris', P2: 'Paris', N: 'Berlin', far: 'Rome' };

/** The encoder: a question's point on the circle (384 dimensions, like MiniLM's). */
const embedder: Embedder = {
  async embed(text) {
    const v = new Float32Array(384);
    const a = angle[text as Question] ?? Math.PI / 2;
    v[0] = Math.cos(a);
    v[1] = Math.sin(a);
    return v;
  },
};
/** The model: the answer the question means, the same every time. */
const meaning: Script = (request) => {
  const last = request.messages.at(-1)?.content ?? '';
  return [{ type: 'content', text: answerOf[last as Question] ?? 'unknown' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];
};

const ask = (question: string, extra: object = {}) => ({ model: 'service', temperature: 0, messages: [{ role: 'user', content: question }], ...extra });

/** A server of its own (a fresh cache), and a store that counts the semantic layer's writes. */
async function start(maxError: number, random: () => number = () => 1, shared?: Store) {
  const counting = countingEngine(createScriptedEngine(meaning), (e) => e.type === 'done');
  const inner = shared ?? createEmbeddedStore({ file: join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json'), cacheMaxEntries: 1000 });
  const writes = { count: 0, answers: 0 };
  const store: Store = {
    ...inner,
    cacheSet: (...args) => (writes.answers++, inner.cacheSet(...args)),
    semanticAdd: (...args) => (writes.count++, inner.semanticAdd(...args)),
    observe: (...args) => (writes.count++, inner.observe(...args)),
  };
  const server = await startTestServer({
    engine: counting.engine, store,
    semantic: { embedder, options: { scope: 'key', ttlSeconds: 60, maxError, verifyShare: 0.1, random } },
  });
  const json = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await postCompletion(server.baseUrl, body, headers);
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as ChatCompletionResponse;
  };
  return { server, counting, writes, json };
}

// δ = 0.5 lets an empty pool count: (0 wrong + 1) / (0 seen + 2) = 0.5; the entry's own rules still apply.
describe('the semantic cache', () => {
  let s: Awaited<ReturnType<typeof start>>;
  before(async () => (s = await start(0.5)));
  after(() => s.server.close());

  it('serves no paraphrase from an entry never verified (cold start), then a hit once the entry has learned', async () => {
    await s.json(ask('A'));
    const cold = await s.json(ask('P1'));
    assert.equal(cold.vcache, false, 'a cold entry answered');
    const generated = s.counting.produced();
    const stored = s.writes.answers;
    const hit = await s.json(ask('P2'));
    assert.equal(hit.vcache, true, 'no hit after the entry was verified at a lower similarity');
    assert.equal(hit.choices[0]?.message.content, 'Paris');
    assert.equal(s.counting.produced(), generated, 'the engine ran for a hit');
    assert.equal(s.writes.answers, stored, 'a semantic hit was stored as the paraphrase\'s exact answer');
  });

  it('never answers across keys, models, schemas, tools, earlier turns or attachments', async () => {
    const note = `data:text/plain;base64,${Buffer.from('a note').toString('base64')}`;
    const { key } = await s.server.keys.create('other tenant');
    const variants: [string, object, Record<string, string>?][] = [
      ['another key', ask('P2'), { Authorization: `Bearer ${key}` }],
      ['another model', ask('P2', { model: 'service-beta' })],
      ['a response format', ask('P2', { response_format: { type: 'json_schema', json_schema: { name: 'city', schema: { type: 'object' } } } })],
      ['tools', ask('P2', { tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })],
      ['another sampling', ask('P2', { top_p: 0.5 })],
      ['an earlier turn', ask('P2', { messages: [{ role: 'user', content: 'far' }, { role: 'assistant', content: 'Rome' }, { role: 'user', content: 'P2' }] })],
      ['an attachment', ask('P2', { messages: [{ role: 'user', content: [{ type: 'text', text: 'P2' }, { type: 'file', file: { filename: 'n.txt', file_data: note } }] }] })],
    ];
    for (const [what, body, headers] of variants) {
      assert.equal((await s.json(body, headers)).vcache, false, `a hit across ${what}`);
    }
    assert.equal((await s.json(ask('P2'))).vcache, true, 'the plain paraphrase no longer hits: the variants proved nothing');
  });

  it('serves no semantic hit to a sampled request (no judge for its answers)', async () => {
    assert.equal((await s.json(ask('P2', { temperature: 0.8 }))).vcache, false);
  });

  it('generates a share of would-be hits fresh, and the bypass header skips the layer', async () => {
    const verifying = await start(0.5, () => 0);
    try {
      for (const q of ['A', 'P1']) await verifying.json(ask(q));
      assert.equal((await verifying.json(ask('P2'))).vcache, false, 'a would-be hit drawn for verification was served');
    } finally {
      await verifying.server.close();
    }
    assert.equal((await s.json(ask('P2'), { 'x-service-bypass-cache': 'true' })).vcache, false);
  });
});

describe('the semantic cache under its bound', () => {
  it('serves no hit at a similarity where the entry was seen wrong', async () => {
    // The draws: N's would-be hit is verified (0 < the share), then P2's would be served (1).
    const draws = [0, 1];
    const s = await start(0.5, () => draws.shift() ?? 1);
    try {
      await s.json(ask('A'));
      await s.json(ask('P1')); // right at 0.90
      assert.equal((await s.json(ask('N'))).choices[0]?.message.content, 'Berlin'); // verified: wrong at 0.96
      assert.equal((await s.json(ask('P2'))).vcache, false, 'served at 0.93, below a similarity seen wrong');
    } finally {
      await s.server.close();
    }
  });

  it('serves nothing while too few verifications back the estimate (δ = 0.02)', async () => {
    const s = await start(0.02);
    try {
      for (const q of ['A', 'P1', 'P2', 'P2']) await s.json(ask(q));
      // P2 repeated is an exact hit; the semantic layer, with one verification, served nothing.
      const generated = s.counting.produced();
      assert.equal((await s.json(ask('P2', { seed: 1 }))).vcache, false);
      assert.equal(s.counting.produced(), generated + 1);
    } finally {
      await s.server.close();
    }
  });

  it('with x-service-zdr writes nothing: no vector, no verification', async () => {
    const s = await start(0.5);
    try {
      for (const q of ['A', 'P1', 'P2']) await s.json(ask(q), { 'x-service-zdr': 'true' });
      assert.equal(s.writes.count, 0);
      await s.json(ask('A'));
      assert.equal(s.writes.count, 1, 'the counting store counts no writes: the test proves nothing');
    } finally {
      await s.server.close();
    }
  });
});

const REDIS_URL = process.env.REDIS_URL;

describe('the semantic cache on Redis', { skip: REDIS_URL ? false : 'REDIS_URL is not set; run: scripts/with-redis.sh 6406 node --import tsx --test src/chat/stages/semantic-cache.test.ts' }, () => {
  it('shares what one instance learned with another: stored on one, verified on the other, served by the first', async () => {
    const keyPrefix = `semantic-test:${randomBytes(6).toString('hex')}:`;
    const stores = [createRedisStore({ url: REDIS_URL!, keyPrefix }), createRedisStore({ url: REDIS_URL!, keyPrefix })];
    const [one, two] = [await start(0.5, () => 1, stores[0]), await start(0.5, () => 1, stores[1])];
    try {
      await one.json(ask('A'));
      assert.equal((await two.json(ask('P1'))).vcache, false, 'a cold entry answered');
      assert.equal((await one.json(ask('P2'))).vcache, true, 'the verification made on the other instance was not seen');
    } finally {
      await Promise.all([one.server.close(), two.server.close()]);
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
