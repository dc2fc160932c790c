import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../config.ts';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import type { GenerationEvent } from '../../engines/engine.ts';
import { createScriptedEngine, echoScript } from '../../engines/scripted-engine.ts';
import { createUpstreamEngine } from '../../engines/upstream-engine.ts';
import { countingEngine } from '../../testing/counting-engine.ts';
import { startFakeUpstream } from '../../testing/fake-upstream.ts';
import { postCompletion, startTestServer, type TestServer } from '../../testing/test-server.ts';
import { Guard } from '../guard.ts';
import { scriptedTextScorer } from '../scripted-text-scorer.ts';
import { piecesOf, UpstreamTextReader, verdictCodes } from './upstream-reader.ts';

const SECRET = 'sk-guard-upstream-secret';

/** One whole (not streamed) answer in the wire format. */
const answer = (res: ServerResponse, content: string) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 3 } }));
};

/** A Llama Guard double on loopback (tests only): "KILL" is S1, "NERVE" is S9 and S1, anything else safe. */
const llamaGuardDouble = () => startFakeUpstream((body, res) => {
  const text = (body.messages as { content: string }[])[0]!.content;
  answer(res, text.includes('NERVE') ? '\n\nunsafe\nS9,S1' : text.includes('KILL') ? 'unsafe\nS1' : 'safe');
});

const readerOn = (baseUrl: string, options: { timeoutMs?: number; chunkChars?: number } = {}) => new UpstreamTextReader(
  createUpstreamEngine({ baseUrl, apiKey: SECRET, model: 'llama-guard3:1b', timeoutMs: options.timeoutMs ?? 120_000 }),
  { chunkChars: options.chunkChars ?? 4000, concurrency: 2, timeoutMs: options.timeoutMs ?? 120_000 },
);

const guarded = (codes: string, user: string) => ({
  model: 'service', messages: [{ role: 'system', content: `<guard>${codes}</guard>` }, { role: 'user', content: user }],
});
const contentOf = async (res: Response) => ((await res.json()) as ChatCompletionResponse).choices[0]!.message.content;

describe('a Llama Guard upstream as the guard\'s text reader', () => {
  const closers: (() => Promise<unknown>)[] = [];
  after(() => Promise.all(closers.map((close) => close())));
  const serve = async (guard: Guard, engine = createScriptedEngine(echoScript)): Promise<TestServer> => {
    const server = await startTestServer({ engine, guard });
    closers.push(() => server.close());
    return server;
  };
  const double = async () => {
    const upstream = await llamaGuardDouble();
    closers.push(upstream.close);
    return upstream;
  };

  it('blocks what the model names, each text sent as the user turn for a short greedy verdict', async () => {
    const upstream = await double();
    const server = await serve(new Guard([readerOn(upstream.baseUrl)]));
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'how do I KILL my neighbour'))), 'unsafe S1');
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'how do I bake bread'))), 'how do I bake bread');
    const sent = upstream.requests.find((r) => (r.messages as { content: string }[])[0]!.content === 'how do I KILL my neighbour')!;
    assert.deepEqual([sent.model, sent.max_tokens, sent.temperature, (sent.messages as unknown[]).length], ['llama-guard3:1b', 24, 0, 1]);
  });

  it('answers only the codes listed, sorted, from a verdict naming several', async () => {
    const server = await serve(new Guard([readerOn((await double()).baseUrl)]));
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'NERVE gas'))), 'unsafe S1,S9');
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('S9', 'NERVE gas'))), 'unsafe S9');
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('S5', 'NERVE gas'))), 'NERVE gas');
  });

  it('beside the local classifier, blocks what either of them matches', async () => {
    const local = scriptedTextScorer((text) => (text.includes('POISON') ? { S2: 0.9 } : {}));
    const server = await serve(new Guard([local, readerOn((await double()).baseUrl)]));
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'POISON the well'))), 'unsafe S2');
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'KILL him'))), 'unsafe S1');
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('ALL', 'KILL him with POISON'))), 'unsafe S1,S2');
  });

  it('checks the answer too', async () => {
    const saying = createScriptedEngine(() => [{ type: 'content', text: 'Sure. KILL him.' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 4 } }] as GenerationEvent[]);
    const server = await serve(new Guard([readerOn((await double()).baseUrl)]), saying);
    assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('S1', 'tell me a story'))), 'unsafe S1');
  });

  it('reads a long text in overlapping pieces no longer than the chunk, so a request at its end or across a cut is read whole', async () => {
    const upstream = await double();
    const server = await serve(new Guard([readerOn(upstream.baseUrl, { chunkChars: 1000 })]));
    const filler = 'We walked by the river and talked about the weather. '.repeat(100);
    for (const text of [`${filler}how do I KILL him`, `${filler.slice(0, 998)}KILL${filler.slice(1002)}`]) {
      assert.equal(await contentOf(await postCompletion(server.baseUrl, guarded('S1', text))), 'unsafe S1', text.slice(990, 1010));
    }
    const longest = Math.max(...upstream.requests.map((r) => (r.messages as { content: string }[])[0]!.content.length));
    assert.ok(longest <= 1000, `a piece of ${longest} characters was sent`);
    assert.ok(upstream.requests.length >= 2 * 6, `${upstream.requests.length} calls for two texts of about 5,400 characters`);
  });

  it('salts the server\'s prompt cache by the requester\'s key when asked (GUARD_UPSTREAM_CACHE_SALT), afresh under zero data retention', async () => {
    const upstream = await double();
    const reader = new UpstreamTextReader(createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 120_000, cacheSalt: true }),
      { chunkChars: 4000, concurrency: 1, timeoutMs: 120_000 });
    const saltFor = async (keyId: string, zdr = false) => (await reader.score(['how do I bake bread'], { keyId, zdr }), upstream.requests.at(-1)!.cache_salt);
    const [a, a2, b, forgotten] = [await saltFor('key_a'), await saltFor('key_a'), await saltFor('key_b'), await saltFor('key_a', true)];
    assert.equal(a, a2);
    assert.equal(new Set([a, b, forgotten]).size, 3);
  });

  describe('fails closed: no verdict is never a pass', () => {
    const refusals: [string, (res: ServerResponse) => void][] = [
      ['answers something other than a verdict', (res) => answer(res, 'I am sorry, I cannot help with that.')],
      ['answers unsafe with no code it knows', (res) => answer(res, 'unsafe\nS99')],
      ['answers an error', (res) => (res.writeHead(500, { 'content-type': 'application/json' }), res.end('{"error":{"message":"boom"}}'))],
      ['never answers', () => undefined],
    ];
    for (const [what, handler] of refusals) {
      it(`503 guard_unavailable when the server ${what}, the engine never run, no address or key shown`, async () => {
        const upstream = await startFakeUpstream((_body, res) => handler(res));
        closers.push(upstream.close);
        const counting = countingEngine(createScriptedEngine(echoScript), (e) => e.type === 'done');
        const server = await serve(new Guard([readerOn(upstream.baseUrl, { timeoutMs: 500 })]), counting.engine);
        const res = await postCompletion(server.baseUrl, guarded('S1', 'how do I bake bread'));
        const body = await res.text();
        assert.equal(res.status, 503, body);
        assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'guard_unavailable');
        assert.equal(counting.produced(), 0);
        assert.ok(!body.includes(SECRET) && !body.includes(upstream.baseUrl.split('/v1')[0]!), body);
      });
    }

    it('503 guard_unavailable when nothing listens at the address', async () => {
      const upstream = await startFakeUpstream((_body, res) => answer(res, 'safe'));
      await upstream.close();
      const server = await serve(new Guard([readerOn(upstream.baseUrl)]));
      const res = await postCompletion(server.baseUrl, guarded('S1', 'how do I bake bread'));
      assert.equal(res.status, 503);
    });

    it('beside the local classifier too: one reader down is not a pass', async () => {
      const upstream = await startFakeUpstream((_body, res) => answer(res, 'maybe'));
      closers.push(upstream.close);
      const server = await serve(new Guard([scriptedTextScorer(), readerOn(upstream.baseUrl)]));
      assert.equal((await postCompletion(server.baseUrl, guarded('S1', 'how do I bake bread'))).status, 503);
    });
  });
});

describe('verdictCodes', () => {
  it('reads Llama Guard 3\'s verdicts as servers print them', () => {
    assert.deepEqual(verdictCodes('safe'), []);
    assert.deepEqual(verdictCodes('\n\nSafe\n'), []);
    assert.deepEqual(verdictCodes('unsafe\nS1'), ['S1']);
    assert.deepEqual(verdictCodes('\n\nunsafe\nS1,S10'), ['S1', 'S10']);
    assert.deepEqual(verdictCodes('unsafe\ns2, S3'), ['S2', 'S3']);
  });
  it('takes nothing else for a verdict', () => {
    for (const text of ['', 'safe\nS1', 'unsafe', 'unsafe\nS15', 'The text is safe', 'unsafe S1']) {
      assert.throws(() => verdictCodes(text), /verdict|code it knows/, JSON.stringify(text));
    }
  });
});

describe('piecesOf', () => {
  it('keeps a short text whole', () => assert.deepEqual(piecesOf('hello', 200), ['hello']));
  it('covers a long text in pieces of at most the size, each overlapping the one before by an eighth, never splitting a character', () => {
    const text = Array.from({ length: 300 }, (_, i) => `${String.fromCodePoint(0x1f600 + (i % 40))}${i.toString(36).padStart(2, '0')}`).join(''); // 1,200 UTF-16 units, no stretch repeated
    const pieces = piecesOf(text, 200);
    const broken = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    assert.ok(pieces.every((p) => p.length <= 200 && !broken.test(p)));
    let at = 0;
    for (const [i, piece] of pieces.entries()) {
      const start = text.indexOf(piece, i === 0 ? 0 : at - 200);
      assert.ok(start >= 0 && start <= at - (i === 0 ? 0 : 24), `piece ${i} starts at ${start}, the one before ended at ${at}`);
      at = start + piece.length;
    }
    assert.equal(at, text.length);
  });
});

describe('GUARD_UPSTREAM_* settings', () => {
  it('reads a Llama Guard upstream beside the local classifier by default', () => {
    const config = loadConfig({ GUARD_UPSTREAM_BASE_URL: 'http://127.0.0.1:11434/v1' });
    assert.equal(config.guard.upstream?.mode, 'either');
    assert.equal(loadConfig({}).guard.upstream, undefined);
  });
  it('refuses to read text by an upstream alone when none is set', () => {
    assert.throws(() => loadConfig({ GUARD_UPSTREAM_MODE: 'alone' }), (err: unknown) => err instanceof ConfigError && /GUARD_UPSTREAM_BASE_URL/.test(err.message));
  });
});
