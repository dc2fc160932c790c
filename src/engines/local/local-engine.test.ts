import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { hello, startTestServer, TEST_KEY, type TestServer } from '../../testing/test-server.ts';
import { createEngine } from '../../wiring/create-engine.ts';
import type { Engine } from '../engine.ts';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import { countingEngine } from '../../testing/counting-engine.ts';
import { normalizeRequest } from '../../chat/normalize-request.ts';
import { foldEvents } from '../fold-events.ts';

const MAX_TOKENS = 600;
/** DEFAULT_MAX_TOKENS for this file: every other test here sets max_tokens. */
const DEFAULT_CAP = 24;

/** Polls `read` until two readings `everyMs` apart agree (the timeout of the test is the hang detector). */
async function settled(read: () => number, everyMs = 1000): Promise<number> {
  for (let last = read(); ; ) {
    await new Promise((r) => setTimeout(r, everyMs));
    const now = read();
    if (now === last) return now;
    last = now;
  }
}

// The embedded model, loaded once for this file, behind the real app; one generation at a time.
let engine: Engine;
let server: TestServer;
let counting: ReturnType<typeof countingEngine>;
before(async () => {
  engine = await createEngine(loadConfig({ PARALLEL: '1', DEFAULT_MAX_TOKENS: String(DEFAULT_CAP) }));
  counting = countingEngine(engine, (event) => event.type === 'content');
  server = await startTestServer({ engine: counting.engine });
});
after(async () => {
  await server.close();
  await engine.close?.();
});

/** A JSON completion from the local model, fresh (never from the cache). */
async function complete(body: object): Promise<ChatCompletionResponse> {
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: 'POST', body: JSON.stringify({ ...hello, temperature: 0, ...body }),
    headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true' },
  });
  assert.equal(res.status, 200);
  return (await res.json()) as ChatCompletionResponse;
}

describe('the local engine when the client leaves', { timeout: 300_000 }, () => {
  for (const stream of [false, true]) {
    it(`stops generating soon after a ${stream ? 'streaming' : 'non-streaming'} client disconnects`, async () => {
      counting.reset();
      const abort = new AbortController();
      const body = { ...hello, stream, max_tokens: MAX_TOKENS, temperature: 0.8, seed: 7,
        messages: [{ role: 'user', content: 'Write a very long story about a dragon who learns to sail.' }] };
      const pending = fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', signal: abort.signal, body: JSON.stringify(body),
        headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' },
      }).then((res) => res.text()).catch(() => 'aborted');
      while (counting.produced() < 5) await new Promise((r) => setTimeout(r, 20));
      abort.abort();
      assert.equal(await pending, 'aborted');
      const total = await settled(counting.produced);
      assert.ok(total < MAX_TOKENS / 2, `${total} content events after the client left at 5`);
      // The one generation slot is free again: the next request is served.
      const next = await fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', body: JSON.stringify({ ...hello, max_tokens: 4 }),
        headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' },
      });
      assert.equal(next.status, 200);
    });
  }
});

// Issue 21, finding 4: an answer closed by the service (the output guard stopping a stream, an
// output check that throws) reached the engine as return(), not as the caller's abort: the
// sequence went back while llama.cpp went on generating on it up to max_tokens.
describe('the local engine when its answer is closed', { timeout: 300_000 }, () => {
  const story = (maxTokens: number) => normalizeRequest({ ...hello, stream: true, max_tokens: maxTokens, temperature: 0.8, seed: 7,
    messages: [{ role: 'user', content: 'Write a very long story about a dragon who learns to sail.' }] } as never, new AbortController().signal);

  it('stops generating before return() resolves, and only then hands the slot on', async () => {
    const events = engine.generate(story(MAX_TOKENS))[Symbol.asyncIterator]();
    for (let content = 0; content < 3;) if ((await events.next()).value?.type === 'content') content++;
    await events.return?.();
    const atReturn = engine.generatedTokens!();
    // The next generation on the one slot: everything counted from here on is its own.
    const next = await foldEvents(engine.generate(story(8)));
    assert.equal(engine.generatedTokens!() - atReturn, next.usage.completionTokens,
      'tokens generated after return() beyond the next answer\'s own');
  });
});

// The embedded model under a tight max_tokens: what is billed never passes what was allowed.
describe('the local engine within max_tokens', { timeout: 300_000 }, () => {  const weather = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } }, required: ['city', 'days'] } } }];

  it('reports a tool call cut at max_tokens as length, and bills no more than max_tokens', async () => {
    for (const max of [1, 6]) {
      const answer = await complete({ max_tokens: max, tool_choice: 'required', tools: weather, messages: [{ role: 'user', content: 'Weather in Paris for the next 5 days?' }] });
      assert.equal(answer.choices[0]?.finish_reason, 'length', JSON.stringify(answer.choices[0]));
      assert.ok(answer.usage.completion_tokens <= max, `${answer.usage.completion_tokens} tokens billed for max_tokens ${max}`);
    }
  });

  it('stops a request that sets no max_tokens at DEFAULT_MAX_TOKENS, sampled with the engine\'s defaults', async () => {
    const { temperature: _, ...unset } = { ...hello, temperature: undefined };
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST', body: JSON.stringify({ ...unset, messages: [{ role: 'user', content: 'Write a long essay about the history of the sea, with many details.' }] }),
      headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true' },
    });
    const answer = (await res.json()) as ChatCompletionResponse;
    assert.deepEqual([answer.choices[0]!.finish_reason, answer.usage.completion_tokens], ['length', DEFAULT_CAP]);
  });

  // Issue 22: vLLM's tests saw max_tokens 10 → length with completion_tokens 7, and 5 → "{" with 1:
  // tokens held back (a stop trigger's prefix, the grammar's) were generated, so they are billed.
  it('bills a JSON answer cut at max_tokens for every token it generated, shown or held back', async () => {
    const long = { type: 'object', properties: { history: { type: 'string', minLength: 400 } }, required: ['history'] };
    for (const response_format of [{ type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'city', schema: long } }]) {
      for (const max of [5, 10]) {
        const answer = await complete({ max_tokens: max, seed: 1, response_format, messages: [{ role: 'user', content: 'Give me a JSON object describing the city of Paris, with many fields.' }] });
        const seen = `${response_format.type}, max_tokens ${max}: ${JSON.stringify(answer.choices[0])}`;
        // The small model may close a json_object early; an answer that stopped has nothing held back.
        if (response_format.type === 'json_schema') assert.equal(answer.choices[0]?.finish_reason, 'length', seen);
        if (answer.choices[0]?.finish_reason === 'length') assert.equal(answer.usage.completion_tokens, max, seen);
        else assert.ok(answer.usage.completion_tokens <= max, seen);
      }
    }
  });

  it('bounds reasoning and answer together by max_tokens', async () => {
    const answer = await complete({ max_tokens: 12, reasoning_effort: 'low', messages: [{ role: 'user', content: 'Explain why the sky is blue.' }] });
    assert.ok(answer.usage.completion_tokens <= 12, `${answer.usage.completion_tokens} tokens billed for max_tokens 12`);
  });
});

// A budget of one token must stay one token: node-llama-cpp reads a pass of 0 tokens as "no
// limit", which once let reasoning_effort high with max_tokens 1 generate for minutes (Schemathesis).
describe('the local engine with a budget of one token', { timeout: 300_000 }, () => {
  for (const [name, extra] of [
    ['reasoning', { reasoning_effort: 'high' }],
    ['a tool decision that may answer instead', { tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }] }],
  ] as const) {
    it(`bills at most one token with ${name}`, async () => {
      const body = await complete({ max_tokens: 1, ...extra });
      assert.ok(body.usage.completion_tokens <= 1, `${body.usage.completion_tokens} tokens for max_tokens 1`);
    });
  }
});

describe('the local engine\'s prompt cache, per API key', { timeout: 600_000 }, () => {
  // One sequence (PARALLEL 1): every request lands where the one before it was read.
  const secret = 'Our launch code list, confidential to this tenant: ' + Array.from({ length: 60 }, (_, i) => `item ${i} is ${(i * 7919) % 1000}`).join('; ');
  const read = async (scope: string | undefined) => {
    const request = { ...normalizeRequest({ model: 'service', max_tokens: 1, temperature: 0, messages: [{ role: 'user', content: secret }] } as never, new AbortController().signal), ...(scope ? { promptCacheScope: scope } : {}) };
    const before = engine.evaluatedPromptTokens!();
    await foldEvents(engine.generate(request));
    return engine.evaluatedPromptTokens!() - before;
  };

  it('reuses a key\'s own prompt, reads another key\'s anew, and keeps nothing of a zero-data-retention request', async () => {
    const first = await read('key_a');
    assert.ok(first > 400, `the prompt read was ${first} tokens`);
    const again = await read('key_a');
    assert.ok(again < first / 4, `the same key's prompt again read ${again} of ${first} tokens`);
    assert.equal(await read('key_b'), first, 'another key\'s request reused the first key\'s reading');
    assert.equal(await read(undefined), first, 'a request without a scope reused a reading');
    assert.equal(await read('key_b'), first, 'a request reused a zero-data-retention request\'s reading');
  });

  it('through the service: a tenant\'s prompt is never read faster because another tenant sent it', async () => {
    const other = (await server.keys.create('other tenant')).key;
    const send = async (key: string, headers: Record<string, string> = {}) => {
      const before = engine.evaluatedPromptTokens!();
      const res = await fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', body: JSON.stringify({ model: 'service', max_tokens: 1, temperature: 0, messages: [{ role: 'user', content: secret }] }),
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true', ...headers },
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.text();
      return engine.evaluatedPromptTokens!() - before;
    };
    const first = await send(TEST_KEY);
    assert.ok(await send(TEST_KEY) < first / 4, 'the same key\'s conversation resent was read again whole');
    assert.equal(await send(other), first);
    assert.equal(await send(other, { 'x-service-zdr': 'true' }), first);
    assert.equal(await send(other), first, 'a zero-data-retention request\'s reading was kept');
  });
});
