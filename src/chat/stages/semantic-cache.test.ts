import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import { createScriptedEngine, type Script } from '../../engines/scripted-engine.ts';
import type { SemanticEntry, Store } from '../../store/store.ts';
import { createEmbeddedStore } from '../../store/embedded-store.ts';
import { createRedisStore } from '../../store/redis-store.ts';
import { randomBytes } from 'node:crypto';
import { countingEngine } from '../../testing/counting-engine.ts';
import { postCompletion, startTestServer, type TestServer } from '../../testing/test-server.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUDGET_FEATURES, type Combination } from '../semantic/budget-judge.ts';
import type { Embedder } from '../semantic/embedder.ts';
import { Guard } from '../../guard/guard.ts';
import { scriptedTextScorer } from '../../guard/scripted-text-scorer.ts';
import { AHEAD_MAX_PROMPT_BYTES, MAX_PIECES } from './semantic-cache.ts';

// The questions (lower case: no fixed terms, so the candidate filter lets them meet) lie on one circle, so their similarities are set by their angles:
// a is the cached question, p1 and p2 its paraphrases (similar 0.90 and 0.93), n a near miss (0.96, another answer).
const angle = { a: 0, p1: Math.acos(0.9), p2: Math.acos(0.93), n: -Math.acos(0.96), far: Math.PI / 2 } as const;
type Question = keyof typeof angle;
const answerOf: Record<Question, string> = { a: 'Paris', p1: 'Paris', p2: 'Paris', n: 'Berlin', far: 'Rome' };

/** A point on the circle (384 dimensions, like MiniLM's), read as one word piece: its alignment with another is their cosine. */
function onTheCircle(a: number) {
  const v = new Float32Array(384);
  v[0] = Math.cos(a);
  v[1] = Math.sin(a);
  return { vector: v, pieces: v };
}

/** The encoder: a question's point on the circle. */
const embedder: Embedder = { async embed(text) { return onTheCircle(angle[text as Question] ?? Math.PI / 2); } };
/** The model: the answer the question means, the same every time. */
const meaning: Script = (request) => {
  const last = request.messages.at(-1)?.content ?? '';
  return [{ type: 'content', text: answerOf[last as Question] ?? 'unknown' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];
};

const ask = (question: string, extra: object = {}) => ({ model: 'service', temperature: 0, messages: [{ role: 'user', content: question }], ...extra });

/** A server of its own (a fresh cache), and a store that counts the semantic layer's writes. */
async function start(maxError: number, random: () => number = () => 1, shared?: Store, encoder: Embedder = embedder, script: Script = meaning, judge?: Combination) {
  const counting = countingEngine(createScriptedEngine(script), (e) => e.type === 'done');
  const inner = shared ?? createEmbeddedStore({ file: join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json'), cacheMaxEntries: 1000 });
  const writes = { count: 0, answers: 0, entries: [] as SemanticEntry[] };
  const store: Store = {
    ...inner,
    cacheSet: (...args) => (writes.answers++, inner.cacheSet(...args)),
    semanticAdd: (...args) => (writes.count++, writes.entries.push(args[1]), inner.semanticAdd(...args)),
    observe: (...args) => (writes.count++, inner.observe(...args)),
  };
  const server = await startTestServer({
    engine: counting.engine, store,
    semantic: { embedder: encoder, options: { scope: 'key', ttlSeconds: 60, maxError, verifyShare: 0.1, random, ...(judge ? { judge } : {}) } },
  });
  const json = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await postCompletion(server.baseUrl, body, headers);
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as ChatCompletionResponse;
  };
  return { server, counting, writes, json };
}

// δ = 0.4: nothing verified estimates (0 wrong + 1) / (0 seen + 2) = 0.5, above it; one right
// verification in the band, 1 / 3, is under it.
describe('the semantic cache', () => {
  let s: Awaited<ReturnType<typeof start>>;
  before(async () => (s = await start(0.4)));
  after(() => s.server.close());

  it('serves no paraphrase while nothing was verified (cold start), then a hit once the entry has learned', async () => {
    await s.json(ask('a'));
    const cold = await s.json(ask('p1'));
    assert.equal(cold.vcache, false, 'a cold entry answered');
    const generated = s.counting.produced();
    const stored = s.writes.answers;
    const hit = await s.json(ask('p2'));
    assert.equal(hit.vcache, true, 'no hit after the entry was verified at a lower similarity');
    assert.equal(hit.choices[0]?.message.content, 'Paris');
    assert.equal(s.counting.produced(), generated, 'the engine ran for a hit');
    assert.equal(s.writes.answers, stored, 'a semantic hit was stored as the paraphrase\'s exact answer');
  });

  it('never answers across keys, models, schemas, tools, earlier turns or attachments', async () => {
    const note = `data:text/plain;base64,${Buffer.from('a note').toString('base64')}`;
    const { key } = await s.server.keys.create('other tenant');
    const variants: [string, object, Record<string, string>?][] = [
      ['another key', ask('p2'), { Authorization: `Bearer ${key}` }],
      ['another model', ask('p2', { model: 'service-beta' })],
      ['a response format', ask('p2', { response_format: { type: 'json_schema', json_schema: { name: 'city', schema: { type: 'object' } } } })],
      ['tools', ask('p2', { tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })],
      ['another sampling', ask('p2', { top_p: 0.5 })],
      ['an earlier turn', ask('p2', { messages: [{ role: 'user', content: 'far' }, { role: 'assistant', content: 'Rome' }, { role: 'user', content: 'p2' }] })],
      ['an attachment', ask('p2', { messages: [{ role: 'user', content: [{ type: 'text', text: 'p2' }, { type: 'file', file: { filename: 'n.txt', file_data: note } }] }] })],
    ];
    for (const [what, body, headers] of variants) {
      assert.equal((await s.json(body, headers)).vcache, false, `a hit across ${what}`);
    }
    assert.equal((await s.json(ask('p2'))).vcache, true, 'the plain paraphrase no longer hits: the variants proved nothing');
  });

  it('serves no semantic hit to a sampled request (no judge for its answers)', async () => {
    assert.equal((await s.json(ask('p2', { temperature: 0.8 }))).vcache, false);
  });

  it('generates a share of would-be hits fresh, and the bypass header skips the layer', async () => {
    const verifying = await start(0.5, () => 0);
    try {
      for (const q of ['a', 'p1']) await verifying.json(ask(q));
      assert.equal((await verifying.json(ask('p2'))).vcache, false, 'a would-be hit drawn for verification was served');
    } finally {
      await verifying.server.close();
    }
    assert.equal((await s.json(ask('p2'), { 'x-service-bypass-cache': 'true' })).vcache, false);
  });
});

describe('the semantic cache under its bound', () => {
  it('serves no hit at a similarity where the entry was seen wrong', async () => {
    // The draws: p1's and n's would-be hits are verified (0 < the share), then p2's would be served (1).
    const draws = [0, 0, 1];
    const s = await start(0.5, () => draws.shift() ?? 1);
    try {
      await s.json(ask('a'));
      await s.json(ask('p1')); // right at 0.90
      assert.equal((await s.json(ask('n'))).choices[0]?.message.content, 'Berlin'); // verified: wrong at 0.96
      assert.equal((await s.json(ask('p2'))).vcache, false, 'served at 0.93, below a similarity seen wrong');
    } finally {
      await s.server.close();
    }
  });

  it('serves nothing while too few verifications back the estimate (δ = 0.02)', async () => {
    const s = await start(0.02);
    try {
      for (const q of ['a', 'p1', 'p2', 'p2']) await s.json(ask(q));
      // P2 repeated is an exact hit; the semantic layer, with one verification, served nothing.
      const generated = s.counting.produced();
      assert.equal((await s.json(ask('p2', { seed: 1 }))).vcache, false);
      assert.equal(s.counting.produced(), generated + 1);
    } finally {
      await s.server.close();
    }
  });

  it('serves a new entry\'s first paraphrase once the scope\'s pool holds enough clean verifications of other entries (δ = 0.02)', async () => {
    const s = await start(0.02);
    try {
      // 60 entries (one per seed: another semantic key), each verified once right at 0.90 by its paraphrase.
      for (let seed = 0; seed < 60; seed++) for (const q of ['a', 'p1']) await s.json(ask(q, { seed }));
      await s.json(ask('a', { seed: 100 }));
      const hit = await s.json(ask('p2', { seed: 100 }));
      assert.equal(hit.vcache, true, 'a new entry waited for verifications of its own');
      assert.equal(hit.choices[0]?.message.content, 'Paris');
    } finally {
      await s.server.close();
    }
  });

  it('with x-service-zdr writes nothing: no vector, no verification', async () => {
    const s = await start(0.5);
    try {
      for (const q of ['a', 'p1', 'p2']) await s.json(ask(q), { 'x-service-zdr': 'true' });
      assert.equal(s.writes.count, 0);
      await s.json(ask('a'));
      assert.equal(s.writes.count, 1, 'the counting store counts no writes: the test proves nothing');
    } finally {
      await s.server.close();
    }
  });
});

describe('the semantic cache\'s word-piece alignment', () => {
  it('never answers a question whose sentence vector is nearer than a verified paraphrase\'s but one of whose words has no counterpart', async () => {
    // "extra" is 0.94 alike to "a" by sentence vector, nearer than "p1" (0.9, verified right), but it
    // carries a word piece of its own (an axis "a" has nothing on), so its pieces align at 0.
    const added = { ...onTheCircle(Math.acos(0.94)) };
    added.pieces = new Float32Array(2 * 384);
    added.pieces.set(added.vector);
    added.pieces[384 + 7] = 1;
    const encoder: Embedder = { async embed(text) { return text === 'extra' ? added : embedder.embed(text); } };
    const script: Script = (request) => request.messages.at(-1)?.content === 'extra'
      ? [{ type: 'content', text: 'Madrid' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }]
      : meaning(request);
    const s = await start(0.4, () => 1, undefined, encoder, script);
    try {
      await s.json(ask('a'));
      await s.json(ask('p1'));
      assert.equal((await s.json(ask('p2'))).vcache, true, 'the verified paraphrase is not served: the test proves nothing');
      const answer = await s.json(ask('extra'));
      assert.equal(answer.choices[0]?.message.content, 'Madrid', 'answered from the entry its sentence vector is near');
    } finally {
      await s.server.close();
    }
  });
});

describe('the semantic cache and a long prompt', () => {
  it('neither compares nor stores a last turn longer than MAX_PIECES word pieces', async () => {
    // "long" is "a" itself by sentence vector, with one piece too many: aligning it would cost the
    // event loop the product of the two lengths.
    const long = { vector: onTheCircle(0).vector, pieces: new Float32Array((MAX_PIECES + 1) * 384) };
    for (let i = 0; i <= MAX_PIECES; i++) long.pieces[i * 384] = 1;
    const encoder: Embedder = { async embed(text) { return text === 'long' ? long : embedder.embed(text); } };
    const s = await start(0.4, () => 1, undefined, encoder);
    try {
      await s.json(ask('a'));
      await s.json(ask('p1'));
      assert.equal((await s.json(ask('p2'))).vcache, true, 'the verified paraphrase is not served: the test proves nothing');
      const entries = s.writes.count;
      assert.equal((await s.json(ask('long'))).vcache, false, 'a long prompt was compared');
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(s.writes.count, entries, 'a long prompt was stored or observed');
    } finally {
      await s.server.close();
    }
  });
});

describe('the semantic cache on a miss with nothing to compare', () => {
  it('answers without waiting for the embedding, which is stored once it is ready', { timeout: 120_000 }, async () => {
    // The encoder holds every embedding until the test lets it go: before the fix the first
    // question, which has no entry to be compared with, waited for it and this test hung.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let embeds = 0;
    const held: Embedder = { async embed(text) { embeds++; await gate; return embedder.embed(text); } };
    const inner = createEmbeddedStore({ file: join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json'), cacheMaxEntries: 1000 });
    let stored!: () => void;
    const added = new Promise<void>((resolve) => (stored = resolve));
    const store: Store = { ...inner, semanticAdd: async (...args) => { await inner.semanticAdd(...args); stored(); } };
    const s = await start(0.4, () => 1, store, held);
    try {
      const first = await s.json(ask('a'));
      assert.equal(first.choices[0]?.message.content, 'Paris');
      assert.equal(embeds, 1, 'the entry\'s embedding was never asked for');
      release();
      await added;
      assert.equal((await s.json(ask('p1'))).vcache, false, 'a cold entry answered');
      assert.equal((await s.json(ask('p2'))).vcache, true, 'the entry stored after its answer was never found');
    } finally {
      release();
      await s.server.close();
    }
  });
});

describe('the semantic cache\'s candidate filter', () => {
  // Real words on the circle: the near miss is nearer to the cached question (0.96) than any of its
  // verified paraphrases (0.90 to 0.94), as MiniLM puts them; only the filter (another name, another
  // number) keeps it from the entry.
  const france = ["Which city is France's capital?", 'Name the capital city of France.', "France's capital is which city?", 'Tell me the capital of France.', 'Which city is the capital of France?'];
  const whale = ['Are whales mammals?', 'Is the whale a mammal?', 'Would you call a whale a mammal?', 'Is a whale a kind of mammal?', 'Whales: are they mammals?'];
  const seven = ['Is seven a prime number?', 'Is 7 prime?', 'Would 7 be a prime number?', 'Is the number 7 a prime?', 'Tell me if 7 is a prime number.'];
  const questions = new Map<string, [number, string]>([
    ['What is the capital of France?', [0, 'Paris']], ['What is the capital of Germany?', [-Math.acos(0.96), 'Berlin']],
    ['Is 7 a prime number?', [Math.PI, 'yes']], ['Is 9 a prime number?', [Math.PI - Math.acos(0.96), 'no']],
    ...france.map((q, i): [string, [number, string]] => [q, [Math.acos(0.9 + i / 100), 'Paris']]),
    ...seven.map((q, i): [string, [number, string]] => [q, [Math.PI + Math.acos(0.9 + i / 100), 'yes']]),
    ['Is a whale a mammal?', [-Math.PI / 2, 'yes']], ['Is a shark a mammal?', [-Math.PI / 2 - Math.acos(0.96), 'no']],
    ...whale.map((q, i): [string, [number, string]] => [q, [-Math.PI / 2 + Math.acos(0.9 + i / 100), 'yes']]),
  ]);
  const onCircle: Embedder = { async embed(text) { return onTheCircle(questions.get(text)?.[0] ?? Math.PI / 2); } };
  const script: Script = (request) => [{ type: 'content', text: questions.get(String(request.messages.at(-1)?.content))?.[1] ?? 'unknown' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];

  it('never answers a question one word apart from a cached one (shark for whale), after many verified paraphrases', async () => {
    const s = await start(0.5, () => 1, undefined, onCircle, script);
    try {
      let served = 0;
      for (const q of ['Is a whale a mammal?', ...whale]) served += (await s.json(ask(q))).vcache ? 1 : 0;
      assert.ok(served > 0, 'no paraphrase was served: the test proves nothing');
      assert.equal((await s.json(ask('Is a shark a mammal?'))).choices[0]?.message.content, 'no', 'the shark answered as the whale');
    } finally {
      await s.server.close();
    }
  });

  it('never answers "capital of Germany" from "capital of France", nor "9" from "7", after many verified paraphrases', async () => {
    const s = await start(0.5, () => 1, undefined, onCircle, script);
    try {
      let served = 0;
      for (const q of ['What is the capital of France?', 'Is 7 a prime number?', ...france, ...seven]) served += (await s.json(ask(q))).vcache ? 1 : 0;
      assert.ok(served > 0, 'no paraphrase was served: the test proves nothing');
      const germany = await s.json(ask('What is the capital of Germany?'));
      assert.equal(germany.choices[0]?.message.content, 'Berlin', 'Germany answered with France\'s capital');
      const nine = await s.json(ask('Is 9 a prime number?'));
      assert.equal(nine.choices[0]?.message.content, 'no', '9 answered as 7');
    } finally {
      await s.server.close();
    }
  });
});

describe('the semantic cache with the budget judge (CACHE_JUDGE=budget)', () => {
  // A judge that trusts its cross-encoder alone (every other weight 0): s = sigmoid(the logit). The
  // scripted cross-encoder vouches for France's paraphrases and rejects Germany, which the
  // encoder puts as near as they are: without the candidate filter, only the judge keeps it apart.
  const judge: Combination = { features: BUDGET_FEATURES, mean: BUDGET_FEATURES.map(() => 0), sd: BUDGET_FEATURES.map(() => 1), weights: BUDGET_FEATURES.map((_, i) => (i === BUDGET_FEATURES.length - 1 ? 1 : 0)), intercept: 0 };
  const questions = new Map<string, [number, string, number]>([ // angle on the circle, answer, the cross-encoder's logit against the cached question
    ['What is the capital of France?', [0, 'Paris', 9]], ["Which city is France's capital?", [Math.acos(0.9), 'Paris', 3]],
    ['Tell me the capital of France.', [Math.acos(0.92), 'Paris', 4]], ['What is the capital of Germany?', [-Math.acos(0.96), 'Berlin', -4]],
  ]);
  const read: string[][] = [];
  const judged: Embedder = {
    async embed(text) { return onTheCircle(questions.get(text)?.[0] ?? Math.PI / 2); },
    async crossLogit(a, b) { read.push([a, b]); return questions.get(b)?.[2] ?? -9; },
  };
  const script: Script = (request) => [{ type: 'content', text: questions.get(String(request.messages.at(-1)?.content))?.[1] ?? 'unknown' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];

  it('judges a paraphrase by the cross-encoder (the cached text first), serves it once verified, and answers a near miss it rejects fresh', async () => {
    const s = await start(0.4, () => 1, undefined, judged, script, judge);
    try {
      await s.json(ask('What is the capital of France?'));
      assert.equal((await s.json(ask("Which city is France's capital?"))).vcache, false, 'served cold');
      assert.deepEqual(read.at(-1), ['What is the capital of France?', "Which city is France's capital?"]);
      const hit = await s.json(ask('Tell me the capital of France.'));
      assert.equal(hit.vcache, true, 'a paraphrase the judge vouches for above a verified one was not served: the test proves nothing');
      assert.equal(hit.choices[0]?.message.content, 'Paris');
      const generated = s.counting.produced();
      const germany = await s.json(ask('What is the capital of Germany?'));
      assert.deepEqual(read.at(-1), ['What is the capital of France?', 'What is the capital of Germany?'], 'the near miss was never judged: the filter kept it apart, not the judge');
      assert.equal(germany.choices[0]?.message.content, 'Berlin', 'Germany answered with France\'s capital');
      assert.equal(s.counting.produced(), generated + 1);
    } finally {
      await s.server.close();
    }
  });

  it('never judges or answers one tenant\'s question against another\'s entries, with no filter before the judge', async () => {
    const s = await start(0.4, () => 1, undefined, judged, script, judge);
    try {
      const { key } = await s.server.keys.create('other tenant');
      const other = { Authorization: `Bearer ${key}` };
      await s.json(ask('What is the capital of France?'));
      await s.json(ask("Which city is France's capital?"));
      assert.equal((await s.json(ask('Tell me the capital of France.'))).vcache, true, 'the owner gets no hit: the test proves nothing');
      const readBefore = read.length;
      const answer = await s.json(ask('Tell me the capital of France.'), other);
      assert.equal(answer.vcache, false, 'another tenant was answered from the owner\'s entry');
      assert.equal(read.length, readBefore, 'another tenant\'s question was read beside the owner\'s cached text');
    } finally {
      await s.server.close();
    }
  });

  it('keeps the last turn\'s text in an entry under the budget judge alone, and none for ZDR', async () => {
    const aligned = await start(0.4, () => 1, undefined, judged, script);
    const budget = await start(0.4, () => 1, undefined, judged, script, judge);
    try {
      await aligned.json(ask('What is the capital of France?'));
      await budget.json(ask('What is the capital of France?'), { 'x-service-zdr': 'true' });
      assert.equal(budget.writes.entries.length, 0, 'a ZDR request stored an entry');
      await budget.json(ask('What is the capital of France?'));
      assert.equal(aligned.writes.entries[0]?.text, undefined, 'the alignment\'s entries keep text they never read');
      assert.equal(budget.writes.entries[0]?.text, 'What is the capital of France?');
    } finally {
      await Promise.all([aligned.server.close(), budget.server.close()]);
    }
  });

  it('answers fresh, once, when the cross-encoder fails', async () => {
    const failing: Embedder = { embed: judged.embed, async crossLogit() { throw new Error('the worker stopped'); } };
    const s = await start(0.4, () => 1, undefined, failing, script, judge);
    try {
      await s.json(ask('What is the capital of France?'));
      const generated = s.counting.produced();
      const answer = await s.json(ask("Which city is France's capital?"));
      assert.equal(answer.choices[0]?.message.content, 'Paris');
      assert.equal(answer.vcache, false);
      assert.equal(s.counting.produced(), generated + 1);
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
    const [one, two] = [await start(0.4, () => 1, stores[0]), await start(0.4, () => 1, stores[1])];
    try {
      await one.json(ask('a'));
      assert.equal((await two.json(ask('p1'))).vcache, false, 'a cold entry answered');
      assert.equal((await one.json(ask('p2'))).vcache, true, 'the verification made on the other instance was not seen');
    } finally {
      await Promise.all([one.server.close(), two.server.close()]);
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe('the semantic cache with candidates: the answer starts beside the lookup', () => {
  /**
   * A model that answers each question as `meaning` does, except "p2": it says a few words and
   * then waits for its signal, as a real model mid-answer would (so a hit must stop it), or for
   * the test to let it finish; and a
   * question whose embedding is held: the test sees when the model started, and lets the
   * encoder go.
   */
  function rig(heldQuestion = 'p2') {
    const calls: string[] = [];
    let startedP2!: () => void;
    const p2Started = new Promise<void>((resolve) => (startedP2 = resolve));
    let finish!: () => void;
    const finishP2 = new Promise<void>((resolve) => (finish = resolve));
    let stoppedP2!: () => void;
    const p2Stopped = new Promise<void>((resolve) => (stoppedP2 = resolve));
    const engine = {
      description: 'a model that waits on "p2"',
      async *generate(request: Parameters<ReturnType<typeof createScriptedEngine>['generate']>[0]) {
        const last = request.messages.at(-1)?.content ?? '';
        calls.push(last);
        if (last !== 'p2') {
          yield* meaning(request);
          return;
        }
        startedP2();
        try {
          yield { type: 'content' as const, text: 'Lyon and more' };
          await new Promise<void>((resolve) => {
            if (request.signal.aborted) resolve();
            request.signal.addEventListener('abort', () => resolve(), { once: true });
            void finishP2.then(resolve);
          });
          yield { type: 'done' as const, finishReason: 'stop' as const, usage: { promptTokens: 1, completionTokens: 3 } };
        } finally {
          stoppedP2(); // aborted, or closed where it stood
        }
      },
    };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let heldEmbeds = 0;
    const encoder: Embedder = {
      async embed(text) {
        if (text === heldQuestion) { heldEmbeds++; await gate; }
        return embedder.embed(text);
      },
    };
    return { engine, calls, p2Started, p2Stopped, release, finish, encoder, held: () => heldEmbeds };
  }

  /** A server with the rig's model and encoder (δ = 0.4), and a key with a balance whose requests are priced. */
  async function serve(r: ReturnType<typeof rig>) {
    const server = await startTestServer({
      engine: r.engine,
      quota: { prices: { prompt: 1000, completion: 1000 }, defaults: { rpm: null, tpm: null } },
      semantic: { embedder: r.encoder, options: { scope: 'key', ttlSeconds: 60, maxError: 0.4, verifyShare: 0.1, random: () => 1 } },
    });
    const { key, record } = await server.keys.create('payer', { credits: 100_000 });
    const post = (body: object) => postCompletion(server.baseUrl, body, { Authorization: `Bearer ${key}` });
    /** The key's balance once the answers have settled. */
    const balance = async () => (await new Promise((resolve) => setTimeout(resolve, 50)), (await server.store.credits(record.id))!);
    return { server, post, balance };
  }

  it('stops the started answer on a hit and charges nothing for it, streamed or not', { timeout: 120_000 }, async () => {
    for (const stream of [false, true]) {
      const r = rig();
      const { server, post, balance } = await serve(r);
      try {
        for (const q of ['a', 'p1']) assert.equal((await post(ask(q))).status, 200);
        const before = await balance();
        const pending = post(ask('p2', { stream }));
        await r.p2Started; // the answer began while the lookup was held: before, this hung
        assert.equal(r.held(), 1, 'the lookup was not held when the answer began');
        r.release();
        const res = await pending;
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.ok(stream ? text.includes('"Paris"') : (JSON.parse(text) as ChatCompletionResponse).choices[0]?.message.content === 'Paris', `not the cached answer: ${text}`);
        assert.ok(!text.includes('Lyon'), 'the started answer leaked into the hit');
        await r.p2Stopped; // the started answer was stopped: before, nothing stopped it
        assert.equal(await balance(), before, `a hit was charged (stream: ${stream})`);
      } finally {
        r.release();
        await server.close();
      }
    }
  });

  it('answers a miss with the answer it started, generated once and charged once', { timeout: 120_000 }, async () => {
    const r = rig('n');
    const { server, post, balance } = await serve(r);
    try {
      assert.equal((await post(ask('a'))).status, 200);
      const after = await balance();
      const spent = 100_000 - after; // "n" costs what "a" did: one token each way
      r.calls.length = 0;
      // "n" has a candidate ("a"), cold: a miss, whose answer began while its lookup was held.
      const pending = post(ask('n'));
      while (r.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(r.held(), 1, 'the lookup was not held when the answer began');
      r.release();
      const body = (await (await pending).json()) as ChatCompletionResponse;
      assert.equal(body.vcache, false);
      assert.equal(body.choices[0]?.message.content, 'Berlin');
      assert.deepEqual(r.calls, ['n'], 'the model ran more or less than once');
      assert.equal(await balance(), after - spent, 'a miss was not charged as one answer');
    } finally {
      r.release();
      await server.close();
    }
  });

  it('answers with the started answer when the encoder fails, generated once', { timeout: 120_000 }, async () => {
    const calls: string[] = [];
    const script: Script = (request) => (calls.push(String(request.messages.at(-1)?.content)), meaning(request));
    const failing: Embedder = { async embed(text) { if (text === 'p1') throw new Error('encoder down'); return embedder.embed(text); } };
    const s = await start(0.4, () => 1, undefined, failing, script);
    try {
      await s.json(ask('a'));
      calls.length = 0;
      const answer = await s.json(ask('p1'));
      assert.equal(answer.choices[0]?.message.content, 'Paris');
      assert.deepEqual(calls, ['p1'], 'the model ran more or less than once');
    } finally {
      await s.server.close();
    }
  });

  it('does not start before the lookup has decided a request that reads attachments (paid work) or a long prompt (a free reading for a hit)', { timeout: 120_000 }, async () => {
    const note = `data:text/plain;base64,${Buffer.from('a note').toString('base64')}`;
    const withNote = (q: string) => ask(q, { messages: [{ role: 'user', content: [{ type: 'text', text: q }, { type: 'file', file: { filename: 'n.txt', file_data: note } }] }] });
    const long = 'x'.repeat(AHEAD_MAX_PROMPT_BYTES);
    const afterLong = (q: string) => ask(q, { messages: [{ role: 'system', content: long }, { role: 'user', content: q }] });
    // The system message, a line break and the two letters of the question: the bound, exactly.
    const justShort = (q: string) => ask(q, { messages: [{ role: 'system', content: long.slice(0, AHEAD_MAX_PROMPT_BYTES - 3) }, { role: 'user', content: q }] });
    for (const [what, body, startsAhead] of [['attachments', withNote, false], ['a long prompt', afterLong, false], ['a prompt just short enough', justShort, true]] as const) {
      const r = rig();
      const { server, post } = await serve(r);
      try {
        assert.equal((await post(body('a'))).status, 200);
        r.calls.length = 0;
        const pending = post(body('p2'));
        while (r.held() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
        if (startsAhead) await r.p2Started; // the control: the same request, short, starts
        else await new Promise((resolve) => setTimeout(resolve, 200));
        assert.deepEqual(r.calls, startsAhead ? ['p2'] : [], `with ${what}, the model started while the lookup was undecided, or not`);
        r.release();
        r.finish(); // a miss: its answer ends
        const res = await pending;
        assert.equal(res.status, 200, await res.text());
      } finally {
        r.release();
        await server.close();
      }
    }
  });
});

describe('the semantic cache and the guard', () => {
  const guard = new Guard(scriptedTextScorer((text) => (text.includes('KILL') ? { S1: 0.97 } : {})));
  // "Kill" passes the scripted check and "KILL" does not; to the candidate filter both are the
  // name "kill", so the questions share their fixed terms. Each sits on the circle by its first word.
  const encoder: Embedder = { async embed(text) { return embedder.embed(text.split(' ')[0]!); } };
  const paris: Script = () => [{ type: 'content', text: 'Paris' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];
  /** A guarded server (δ = 0.4), and a question asked with `system` as its system message. */
  async function guardedServer(system = '<guard>S1</guard>') {
    const server = await startTestServer({
      engine: createScriptedEngine(paris), guard,
      semantic: { embedder: encoder, options: { scope: 'key', ttlSeconds: 60, maxError: 0.4, verifyShare: 0.1, random: () => 1 } },
    });
    const guarded = (question: string) => ask(question, { messages: [{ role: 'system', content: system }, { role: 'user', content: question }] });
    const json = async (question: string) => (await (await postCompletion(server.baseUrl, guarded(question))).json()) as ChatCompletionResponse;
    return { server, json };
  }

  it('answers a guarded would-be hit fresh when its answer could not start ahead (a long prompt): its text would go unchecked', { timeout: 120_000 }, async () => {
    const { server, json } = await guardedServer(`<guard>S1</guard> ${'x'.repeat(AHEAD_MAX_PROMPT_BYTES)}`);
    try {
      for (const q of ['a Kill', 'p1 Kill']) {
        await json(q);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal((await json('p2 Kill')).vcache, false, 'a guarded paraphrase was served without its input check');
      assert.equal((await json('p2 KILL')).choices[0]?.message.content, 'unsafe S1');
    } finally {
      await server.close();
    }
  });

  it('serves a guarded paraphrase only once its own text has passed the input check: a harmful one is answered "unsafe", never the cached answer', { timeout: 120_000 }, async () => {
    const { server, json } = await guardedServer();
    try {
      await json('a Kill');
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal((await json('p1 Kill')).vcache, false, 'a cold entry answered');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const served = await json('p2 Kill');
      assert.equal(served.vcache, true, 'the verified paraphrase is not served: the test proves nothing');
      const stages = (body: ChatCompletionResponse) => body.precontext.filter((e) => e.name === 'guardrails').map((e) => [(e.result as { stage: string }).stage, (e.result as { safe: boolean }).safe]);
      assert.deepEqual(stages(served), [['input', true], ['output', true]], 'a hit carries one input verdict, its own, and the cached answer\'s output verdict');
      const harmful = await json('p2 KILL');
      assert.deepEqual([harmful.choices[0]?.message.content, harmful.vcache], ['unsafe S1', false], 'a harmful paraphrase got the cached answer, its text never checked');
      assert.deepEqual(stages(harmful), [['input', false]]);
    } finally {
      await server.close();
    }
  });
});
