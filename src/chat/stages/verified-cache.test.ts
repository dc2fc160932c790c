import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import { createScriptedEngine, echoScript } from '../../engines/scripted-engine.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEmbeddedStore } from '../../store/embedded-store.ts';
import { countingEngine } from '../../testing/counting-engine.ts';
import { hello, postCompletion, startTestServer, type TestServer } from '../../testing/test-server.ts';

const ask = (content: string, extra: object = {}) => ({ ...hello, ...extra, messages: [{ role: 'user', content }] });

describe('the verified cache', () => {
  let server: TestServer;
  const counting = countingEngine(createScriptedEngine(echoScript), (e) => e.type === 'done');
  before(async () => (server = await startTestServer({ engine: counting.engine })));
  after(() => server.close());

  const json = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await postCompletion(server.baseUrl, body, headers);
    assert.equal(res.status, 200);
    return (await res.json()) as ChatCompletionResponse;
  };

  it('answers a repeated request from the cache: same content and usage, a fresh id, vcache true, no generation', async () => {
    const first = await json(ask('the first question'));
    const generated = counting.produced();
    const second = await json(ask('the first question'));
    assert.equal(counting.produced(), generated, 'the engine ran again');
    assert.deepEqual([first.vcache, second.vcache], [false, true]);
    assert.equal(second.choices[0]?.message.content, first.choices[0]?.message.content);
    assert.deepEqual(second.usage, first.usage);
    assert.notEqual(second.id, first.id);
  });

  it('replays a hit as a proper stream, and a stream fills the cache', async () => {
    await json(ask('streamed later'));
    const res = await postCompletion(server.baseUrl, ask('streamed later', { stream: true, stream_options: { include_usage: true } }));
    const events = (await res.text()).split('\n\n').filter(Boolean).map((e) => e.slice('data: '.length));
    assert.equal(events.at(-1), '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'streamed later');
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.ok(chunks.at(-1).usage.total_tokens > 0);

    const streamed = await postCompletion(server.baseUrl, ask('first streamed', { stream: true }));
    await streamed.text();
    assert.equal((await json(ask('first streamed'))).vcache, true);
  });

  it('says in x-service-cache whether the cache answered (hit, miss, bypass), streamed too, where chunks carry no vcache', async () => {
    const status = async (body: object, headers: Record<string, string> = {}) => {
      const res = await postCompletion(server.baseUrl, body, headers);
      await res.arrayBuffer();
      return res.headers.get('x-service-cache');
    };
    for (const stream of [false, true]) {
      const question = ask(`said in a header ${stream}`, { stream });
      assert.equal(await status(question), 'miss');
      assert.equal(await status(question), 'hit');
      assert.equal(await status(question, { 'x-service-bypass-cache': 'true' }), 'bypass');
    }
  });

  it('with x-service-bypass-cache neither reads nor writes', async () => {
    await json(ask('bypassed'), { 'x-service-bypass-cache': 'true' });
    assert.equal((await json(ask('bypassed'))).vcache, false, 'a bypassing request wrote the cache');
    assert.equal((await json(ask('bypassed'), { 'x-service-bypass-cache': 'true' })).vcache, false, 'a bypassing request read the cache');
  });

  it('with x-service-zdr may read what others stored, and never writes', async () => {
    await json(ask('kept by others'));
    assert.equal((await json(ask('kept by others'), { 'x-service-zdr': 'true' })).vcache, true);
    await json(ask('zero retention'), { 'x-service-zdr': 'true' });
    assert.equal((await json(ask('zero retention'))).vcache, false);
  });

  it('never stores an answer cut at max_tokens', async () => {
    const cut = await json(ask('one two three four', { max_tokens: 2 }));
    assert.equal(cut.choices[0]?.finish_reason, 'length');
    assert.equal((await json(ask('one two three four', { max_tokens: 2 }))).vcache, false);
  });

  it('is scoped to the key: another key does not see the answer', async () => {
    await json(ask('mine alone'));
    const { key } = await server.keys.create('other');
    assert.equal((await json(ask('mine alone'), { Authorization: `Bearer ${key}` })).vcache, false);
  });
});

describe('the verified cache with an engine that fails or is left', () => {
  it('never stores an answer that ended in an error, or one whose client left', async () => {
    let calls = 0;
    const engine = createScriptedEngine(() => {
      calls++;
      return [{ type: 'content', text: 'partial' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];
    }, 300);
    const server = await startTestServer({ engine });
    try {
      const abort = new AbortController();
      const left = fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', signal: abort.signal, body: JSON.stringify(ask('left early')),
        headers: { Authorization: 'Bearer sk-test-key', 'Content-Type': 'application/json' },
      }).catch(() => 'aborted');
      await new Promise((r) => setTimeout(r, 100));
      abort.abort();
      await left;
      await new Promise((r) => setTimeout(r, 700)); // the scripted engine would have finished by now
      const res = await postCompletion(server.baseUrl, ask('left early'));
      assert.equal(((await res.json()) as ChatCompletionResponse).vcache, false);
      assert.equal(calls, 2);
    } finally {
      await server.close();
    }
  });
});

describe('the verified cache with a bound on entry size', () => {
  it('answers a request whose answer is too large to store, and stores a small one', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json');
    const store = createEmbeddedStore({ file, cacheMaxEntries: 100, cacheMaxEntryBytes: 2_000 });
    const server = await startTestServer({ store });
    try {
      const json = async (content: string) => {
        const res = await postCompletion(server.baseUrl, ask(content));
        assert.equal(res.status, 200);
        return (await res.json()) as ChatCompletionResponse;
      };
      const long = 'a long question '.repeat(200);
      const first = await json(long);
      assert.equal(first.choices[0]?.message.content, long, 'the answer is whole though not stored');
      assert.equal((await json(long)).vcache, false, 'an entry above CACHE_MAX_ENTRY_BYTES was stored');
      await json('short');
      assert.equal((await json('short')).vcache, true);
    } finally {
      await server.close();
    }
  });
});
