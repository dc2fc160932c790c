import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { createScriptedEngine } from './engines/scripted-engine.ts';
import { countingEngine } from './testing/counting-engine.ts';
import type { ChatCompletionResponse } from './contract/wire-types.ts';
import type { Engine } from './engines/engine.ts';
import { hello, postCompletion, startTestServer, TEST_KEY, type TestServer } from './testing/test-server.ts';
import { createUpstreamEngine } from './engines/upstream-engine.ts';
import { ServiceError } from './errors/service-error.ts';
import { Metrics } from './http/metrics.ts';
import { createLogger } from './logging.ts';
import { delta, sendStream, startFakeUpstream } from './testing/fake-upstream.ts';

async function expectError(res: Response, status: number, type: string, code?: string) {
  assert.equal(res.status, status);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/);
  const body = (await res.json()) as { error: { message: string; type: string; code: string } };
  assert.equal(body.error.type, type);
  if (code) assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  return body.error;
}

describe('the validated server', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it('answers a valid request with a completion', async () => {
    const res = await postCompletion(server.baseUrl, hello);
    assert.equal(res.status, 200);
    const body = (await res.json()) as ChatCompletionResponse;
    assert.match(body.id, /^service-\d+$/);
    assert.equal(body.object, 'chat.completion');
    assert.equal(body.choices[0]?.message.content, 'hello there');
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);
    assert.ok(res.headers.get('x-request-id'));
  });

  it('rejects a request missing messages, naming the field', async () => {
    const error = await expectError(await postCompletion(server.baseUrl, { model: 'service' }), 400,
      'invalid_request_error', 'invalid_request');
    assert.match(error.message, /messages/);
  });

  it('rejects temperature 3, naming the field', async () => {
    const error = await expectError(await postCompletion(server.baseUrl, { ...hello, temperature: 3 }), 400,
      'invalid_request_error');
    assert.match(error.message, /temperature/);
  });

  it('rejects malformed JSON', async () => {
    await expectError(await postCompletion(server.baseUrl, '{"model": "service",'), 400, 'invalid_request_error',
      'invalid_json');
  });

  it('accepts and ignores unknown extra fields', async () => {
    const res = await postCompletion(server.baseUrl, { ...hello, logprobs: false, metadata: { a: 1 }, store: true });
    assert.equal(res.status, 200);
  });

  it('rejects a request without a key, with WWW-Authenticate', async () => {
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(hello),
    });
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
    await expectError(res, 401, 'authentication_error', 'invalid_api_key');
  });

  it('accepts a created key until it is revoked', async () => {
    const { key, record } = await server.keys.create('revocable');
    const auth = { Authorization: `Bearer ${key}` };
    assert.equal((await postCompletion(server.baseUrl, hello, auth)).status, 200);
    assert.equal(await server.keys.revoke(record.id), true);
    await expectError(await postCompletion(server.baseUrl, hello, auth), 401, 'authentication_error', 'invalid_api_key');
  });

  it('answers a wrong content type, an unknown path and a wrong method with envelopes', async () => {
    await expectError(await postCompletion(server.baseUrl, 'hi', { 'Content-Type': 'text/plain' }), 415,
      'invalid_request_error', 'unsupported_media_type');
    const unknown = await fetch(`${server.baseUrl}/completions`, { method: 'POST', headers: { Authorization: `Bearer ${TEST_KEY}` } });
    await expectError(unknown, 404, 'invalid_request_error', 'unknown_url');
    const get = await fetch(`${server.baseUrl}/chat/completions`, { headers: { Authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(get.headers.get('allow'), 'POST');
    await expectError(get, 405, 'invalid_request_error', 'method_not_allowed');
  });

  it('checks what the schema cannot: tool_call_id and tool_choice', async () => {
    const orphan = { ...hello, messages: [...hello.messages, { role: 'tool', tool_call_id: 'nope', content: '1' }] };
    const error = await expectError(await postCompletion(server.baseUrl, orphan), 400, 'invalid_request_error');
    assert.match(error.message, /tool_call_id/);
    const tools = [{ type: 'function', function: { name: 'get_weather' } }];
    const named = { ...hello, tools, tool_choice: { type: 'function', function: { name: 'other' } } };
    await expectError(await postCompletion(server.baseUrl, named), 400, 'invalid_request_error', 'unknown_function');
  });
});

describe('limits and failures', () => {
  it('answers a body over the limit with 413', async () => {
    const server = await startTestServer({ bodyLimitBytes: 1024 });
    try {
      const big = { ...hello, messages: [{ role: 'user', content: 'x'.repeat(4096) }] };
      await expectError(await postCompletion(server.baseUrl, big), 413, 'payload_too_large', 'payload_too_large');
    } finally {
      await server.close();
    }
  });

  it('hides an unexpected failure behind a 500 and logs it with the request id', async () => {
    const failing: Engine = {
      description: 'failing',
      async *generate() {
        throw new Error('secret internal detail');
      },
    };
    const server = await startTestServer({ engine: failing });
    try {
      const res = await postCompletion(server.baseUrl, hello, { 'x-request-id': 'req-42' });
      const text = await res.clone().text();
      const error = await expectError(res, 500, 'internal_error', 'internal_error');
      assert.match(error.message, /req-42/);
      assert.doesNotMatch(text, /secret internal detail|at .*\.ts/);
      assert.match(String(server.logged[0]?.[0]), /req-42/);
    } finally {
      await server.close();
    }
  });

  it('sends a failure after the stream started as a final error event, then [DONE]', async () => {
    const failing: Engine = {
      description: 'fails mid-stream',
      async *generate() {
        yield { type: 'content', text: 'partial' };
        throw new Error('boom');
      },
    };
    const server = await startTestServer({ engine: failing });
    try {
      const res = await postCompletion(server.baseUrl, { ...hello, stream: true });
      assert.equal(res.status, 200);
      const events = (await res.text()).split('\n\n').filter(Boolean);
      assert.equal(events.at(-1), 'data: [DONE]');
      const last = JSON.parse(events.at(-2)!.slice('data: '.length));
      assert.equal(last.error.type, 'internal_error');
      assert.match(events.join(), /partial/);
    } finally {
      await server.close();
    }
  });

  it('stops generating when the client of a non-streaming request disconnects', async () => {
    const counting = countingEngine(createScriptedEngine(() => Array.from({ length: 400 }, () => ({ type: 'content' as const, text: 'x ' })), 5));
    const produced = counting.produced;
    const server = await startTestServer({ engine: counting.engine });
    try {
      const abort = new AbortController();
      const pending = fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST', signal: abort.signal, body: JSON.stringify(hello),
        headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' },
      }).catch(() => 'aborted');
      while (produced() === 0) await new Promise((r) => setTimeout(r, 10));
      abort.abort();
      assert.equal(await pending, 'aborted');
      await new Promise((r) => setTimeout(r, 200));
      const seen = produced();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(produced(), seen, 'generation went on after the client left');
      assert.ok(produced() < 400);
    } finally {
      await server.close();
    }
  });

  it('stops generating when the client disconnects', async () => {
    const script = () => Array.from({ length: 200 }, () => ({ type: 'content' as const, text: 'x ' }));
    const counting = countingEngine(createScriptedEngine(script, 5));
    const server = await startTestServer({ engine: counting.engine });
    try {
      const res = await postCompletion(server.baseUrl, { ...hello, stream: true });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      await new Promise((r) => setTimeout(r, 200));
      const seen = counting.produced();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(counting.produced(), seen, 'generation went on after the client left');
      assert.ok(counting.produced() < 200);
    } finally {
      await server.close();
    }
  });
});

describe('the official openai SDK', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it('gets AuthenticationError for a bad key', async () => {
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'service', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401,
    );
  });

  it('gets a completion, whole and streamed, for a good key', async () => {
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: TEST_KEY, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'service', messages: [{ role: 'user', content: 'hi you' }] });
    assert.equal(completion.choices[0]?.message.content, 'hi you');
    const stream = await client.chat.completions.create({
      model: 'service',
      messages: [{ role: 'user', content: 'hi you' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'hi you');
  });
});

describe('engine resources', () => {
  it('are released after every stream, so a one-slot queue serves streams one after another', { timeout: 10_000 }, async () => {
    const { withQueue } = await import('./engines/queued-engine.ts');
    const { echoScript } = await import('./engines/scripted-engine.ts');
    const server = await startTestServer({ engine: withQueue(createScriptedEngine(echoScript), { concurrency: 1, maxWaiting: 0 }) });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await postCompletion(server.baseUrl, { ...hello, stream: true });
        assert.equal(res.status, 200, `stream ${i}`);
        assert.match(await res.text(), /data: \[DONE\]/);
      }
    } finally {
      await server.close();
    }
  });

  it('answer a full queue with 503 and Retry-After before any stream starts', async () => {
    const { withQueue } = await import('./engines/queued-engine.ts');
    const slow = createScriptedEngine(() => [
      { type: 'content', text: 'slow' },
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } },
    ], 300);
    const server = await startTestServer({ engine: withQueue(slow, { concurrency: 1, maxWaiting: 0 }) });
    try {
      const first = postCompletion(server.baseUrl, hello);
      await new Promise((r) => setTimeout(r, 50));
      const refused = await postCompletion(server.baseUrl, { ...hello, stream: true });
      assert.equal(refused.headers.get('retry-after'), '1');
      await expectError(refused, 503, 'service_unavailable', 'queue_full');
      assert.equal((await first).status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('review findings: keys file, tool call ids', () => {
  it('keeps serving the stored keys and the key given at start when the keys file turns malformed', async () => {
    const { utimesSync, writeFileSync } = await import('node:fs');
    const server = await startTestServer();
    try {
      const { key } = await server.keys.create('good');
      writeFileSync(server.keysFile, '[{"id": "key_1",');
      utimesSync(server.keysFile, 1_000, 1_000); // an mtime of its own, so the change cannot go unseen
      assert.equal((await postCompletion(server.baseUrl, hello)).status, 200);
      assert.equal((await postCompletion(server.baseUrl, hello, { Authorization: `Bearer ${key}` })).status, 200);
      const anonymous = await fetch(`${server.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(hello),
      });
      await expectError(anonymous, 401, 'authentication_error', 'invalid_api_key');
      assert.ok(server.logged.some((line) => /keys file/i.test(String(line[0]))), JSON.stringify(server.logged));
    } finally {
      await server.close();
    }
  });

  it('refuses empty tool call ids in the validator, naming the field', async () => {
    const server = await startTestServer();
    try {
      const call = { id: '', type: 'function', function: { name: 'f', arguments: '{}' } };
      const emptyAnswer = { ...hello, messages: [
        ...hello.messages,
        { role: 'assistant', content: null, tool_calls: [{ ...call, id: 'call_1' }] },
        { role: 'tool', tool_call_id: '', content: '1' },
      ] };
      const answerError = await expectError(await postCompletion(server.baseUrl, emptyAnswer), 400,
        'invalid_request_error', 'invalid_request');
      assert.match(answerError.message, /messages\.2\.tool_call_id: must NOT have fewer than 1 characters/);
      const emptyCall = { ...hello, messages: [
        ...hello.messages,
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: '', content: '1' },
      ] };
      const callError = await expectError(await postCompletion(server.baseUrl, emptyCall), 400,
        'invalid_request_error', 'invalid_request');
      assert.match(callError.message, /messages\.1\.tool_calls\.0\.id: must NOT have fewer than 1 characters/);
    } finally {
      await server.close();
    }
  });
});

describe('stream_options (issue 9, finding 6)', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it('are refused without stream: true, naming the field, as OpenAI and vLLM answer', async () => {
    for (const stream of [false, undefined]) {
      const error = await expectError(await postCompletion(server.baseUrl, { ...hello, stream, stream_options: { include_usage: true } }),
        400, 'invalid_request_error', 'invalid_request');
      assert.match(error.message, /stream_options/);
    }
  });

  it('take null as absent, in the object and in include_usage', async () => {
    assert.equal((await postCompletion(server.baseUrl, { ...hello, stream_options: null })).status, 200);
    const res = await postCompletion(server.baseUrl, { ...hello, stream: true, stream_options: { include_usage: null } });
    assert.equal(res.status, 200);
    assert.doesNotMatch(await res.text(), /"usage":\{/);
  });
});

describe('GET /v1/models (issue 9, finding 8)', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it('lists both spellings of the model to the official SDK, and asks for a key like every operation', async () => {
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: TEST_KEY, maxRetries: 0 });
    const ids = [];
    for await (const model of client.models.list()) ids.push([model.id, model.object, model.owned_by]);
    assert.deepEqual(ids, [['service', 'model', 'service'], ['service-beta', 'model', 'service']]);
    await expectError(await fetch(`${server.baseUrl}/models`), 401, 'authentication_error', 'invalid_api_key');
  });
});

describe('reasoning where clients look (issue 9, finding 7)', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());
  const thinking = { ...hello, reasoning_effort: 'low' };

  it('puts the trace in reasoning and in choices[0].message.reasoning_content of the JSON answer', async () => {
    const body = (await (await postCompletion(server.baseUrl, thinking)).json()) as ChatCompletionResponse;
    assert.equal(body.reasoning, 'The user wrote 2 words.');
    assert.equal(body.choices[0]?.message.reasoning_content, body.reasoning);
    const plain = (await (await postCompletion(server.baseUrl, hello)).json()) as ChatCompletionResponse;
    assert.equal('reasoning_content' in plain.choices[0]!.message, false);
  });

  for (const header of [false, true]) {
    it(`streams it ${header ? 'in delta.reasoning_content with x-service-reasoning-delta' : 'in <think> tags by default'}, once`, async () => {
      const res = await postCompletion(server.baseUrl, { ...thinking, stream: true }, header ? { 'x-service-reasoning-delta': 'true', 'x-service-bypass-cache': 'true' } : { 'x-service-bypass-cache': 'true' });
      const chunks = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
      const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
      const reasoning = chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? '').join('');
      if (header) assert.deepEqual([reasoning, content], ['The user wrote 2 words.', 'hello there']);
      else assert.deepEqual([reasoning, content], ['', '<think>The user wrote 2 words.</think>hello there']);
    });
  }
});

describe('an upstream\'s error shapes never reach the caller or the listeners as they came (issue 21, finding 1)', () => {
  // As in production: no response validation, the metrics and the request log on.
  const production = (engine: Engine) => startTestServer({
    engine, validateResponses: false, metrics: new Metrics(), requestLogger: createLogger('info', { write: () => {} }),
  });

  it('a llama.cpp upstream\'s numeric code: a string code for the caller, and the next requests are served', async () => {
    const upstream = await startFakeUpstream((body, res) => {
      const error = { error: { code: 400, message: 'the request exceeds the available context size', type: 'exceed_context_size_error' } };
      if (body.stream) sendStream(res, [delta({ content: 'a' }), error]);
      else res.writeHead(400, { 'Content-Type': 'application/json' }).end(JSON.stringify(error));
    });
    const server = await production(createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 5000 }));
    try {
      const error = await expectError(await postCompletion(server.baseUrl, hello), 400, 'invalid_request_error', 'context_length_exceeded');
      assert.equal(typeof error.code, 'string');
      const streamed = await (await postCompletion(server.baseUrl, { ...hello, stream: true })).text();
      const frame = JSON.parse(streamed.split('\n\n').filter(Boolean).at(-2)!.slice('data: '.length));
      assert.equal(typeof frame.error.code, 'string');
      // The process is still here and serving: the answers above did not crash it on 'close'.
      await expectError(await postCompletion(server.baseUrl, hello), 400, 'invalid_request_error', 'context_length_exceeded');
      const metrics = await (await fetch(server.baseUrl.replace(/\/v1$/, '/metrics'))).text();
      assert.match(metrics, /service_requests_total\{status="400",code="context_length_exceeded"\} 2/);
    } finally {
      await server.close();
      await upstream.close();
    }
  });

  it('an error with a code that is not a string, from anywhere, is answered with a string and crashes no listener', async () => {
    const odd: Engine = {
      description: 'throws an error of the wrong shape',
      async *generate() {
        throw new ServiceError(400, 'invalid_request_error', 400 as never, { text: 'not a string' } as never);
      },
    };
    const server = await production(odd);
    try {
      for (let i = 0; i < 2; i++) {
        const error = await expectError(await postCompletion(server.baseUrl, hello), 400, 'invalid_request_error');
        assert.equal(typeof error.code, 'string');
      }
    } finally {
      await server.close();
    }
  });
});

describe('an assistant turn with tool_calls and no content (issue 21, finding 2)', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());
  const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
  const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
  const client = () => new OpenAI({ baseURL: server.baseUrl, apiKey: TEST_KEY, maxRetries: 0 });

  const roundTrips: [string, OpenAI.ChatCompletionAssistantMessageParam][] = [
    ['content null', { role: 'assistant', content: null, tool_calls: [call] }],
    ['content absent, as LiteLLM forwards it', { role: 'assistant', tool_calls: [call] }],
  ];
  for (const [name, assistant] of roundTrips) {
    it(`completes a tool round trip whose assistant turn has tool_calls and ${name}`, async () => {
      const completion = await client().chat.completions.create({
        model: 'service', tools,
        messages: [{ role: 'user', content: 'weather in Paris?' }, assistant, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }],
      });
      assert.equal(completion.choices[0]?.finish_reason, 'stop');
      assert.equal(typeof completion.choices[0]?.message.content, 'string');
    });
  }

  for (const [name, assistant] of [
    ['neither content nor tool_calls', { role: 'assistant' }],
    ['content null and no tool_calls', { role: 'assistant', content: null }],
    ['content null and an empty tool_calls', { role: 'assistant', content: null, tool_calls: [] }],
  ] as const) {
    it(`refuses an assistant turn with ${name}, naming the rule`, async () => {
      const res = await postCompletion(server.baseUrl, { model: 'service', messages: [{ role: 'user', content: 'hi' }, assistant] });
      const error = await expectError(res, 400, 'invalid_request_error', 'invalid_request');
      assert.match(error.message, /messages(\.|\[)1/);
      assert.match(error.message, /content.*tool_calls|tool_calls.*content/);
    });
  }

  it('refuses a user turn without content, naming the field', async () => {
    const res = await postCompletion(server.baseUrl, { model: 'service', messages: [{ role: 'user' }] });
    const error = await expectError(res, 400, 'invalid_request_error', 'invalid_request');
    assert.match(error.message, /messages(\.|\[)0/);
    assert.match(error.message, /content/);
  });

  it('refuses tool_choice required or a named function without tools, naming tool_choice and tools', async () => {
    for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
      for (const extra of [{}, { tools: [] }, { tools: null }]) {
        const error = await expectError(await postCompletion(server.baseUrl, { ...hello, tool_choice, ...extra }), 400, 'invalid_request_error', 'invalid_request');
        assert.match(error.message, /tool_choice/);
        assert.match(error.message, /tools/);
      }
    }
  });
});
