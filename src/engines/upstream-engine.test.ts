import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { foldEvents } from './fold-events.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import { ServiceError } from '../errors/service-error.ts';
import { delta, sendStream, startFakeUpstream } from '../testing/fake-upstream.ts';
import { createUpstreamEngine } from './upstream-engine.ts';

const request = (extra: Record<string, unknown> = {}, signal = new AbortController().signal) =>
  normalizeRequest({ model: 'service', messages: [{ role: 'user', content: 'hi' }], ...extra } as never, signal);

const engineFor = (baseUrl: string, timeoutMs = 2000, answerTimeoutMs = timeoutMs) =>
  createUpstreamEngine({ baseUrl, model: 'm', apiKey: 'k', timeoutMs, answerTimeoutMs });

describe('upstream engine', () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all(closers.map((c) => c())));

  it('passes the request on and reads content, reasoning, tool calls and usage', async () => {
    const upstream = await startFakeUpstream((_body, res) =>
      sendStream(res, [
        delta({ role: 'assistant', reasoning_content: 'hmm' }),
        delta({ content: 'Hel' }),
        delta({ content: 'lo' }),
        delta({ tool_calls: [{ index: 0, id: 'c1', function: { name: 'f', arguments: '{"a"' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, 'tool_calls'),
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 7 } },
      ]));
    closers.push(upstream.close);
    const folded = await foldEvents(engineFor(upstream.baseUrl).generate(request({ stream: true, temperature: 0.5, seed: 3, stop: 'x' })));
    assert.equal(folded.content, 'Hello');
    assert.equal(folded.reasoning, 'hmm');
    assert.deepEqual(folded.toolCalls, [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }]);
    assert.equal(folded.finishReason, 'tool_calls');
    assert.deepEqual(folded.usage, { promptTokens: 5, completionTokens: 7 });
    const sent = upstream.requests[0]!;
    assert.equal(sent.model, 'm');
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.stream_options, { include_usage: true });
    assert.equal(sent.temperature, 0.5);
    assert.equal(sent.seed, 3);
    assert.deepEqual(sent.stop, ['x']);
  });

  it('leaves temperature and top_p to the upstream\'s own defaults when the request sets none', async () => {
    const upstream = await startFakeUpstream((_b, res) => sendStream(res, [delta({ content: 'Hi' }, 'stop')]));
    closers.push(upstream.close);
    await foldEvents(engineFor(upstream.baseUrl).generate(request({ stream: true })));
    const sent = upstream.requests[0]!;
    assert.deepEqual([Object.hasOwn(sent, 'temperature'), Object.hasOwn(sent, 'top_p')], [false, false]);
  });

  it('gives a tool call the upstream sent without an id, or with an empty one, an id of its own', async () => {
    const upstream = await startFakeUpstream((_b, res) =>
      sendStream(res, [
        delta({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '}' } }] }),
        delta({ tool_calls: [{ index: 1, id: '', function: { name: 'g', arguments: '{}' } }] }, 'tool_calls'),
      ]));
    closers.push(upstream.close);
    const events = [];
    for await (const event of engineFor(upstream.baseUrl).generate(request())) events.push(event);
    const ids = events.flatMap((e) => (e.type === 'tool_call' && e.id !== undefined ? [e.id] : []));
    assert.equal(ids.length, 2, 'one id per call, on its first delta');
    for (const id of ids) assert.match(id, /^call_[0-9a-f]{24}$/);
    assert.notEqual(ids[0], ids[1]);
  });

  it('reads reasoning sent as leading <think> tags in content', async () => {
    const upstream = await startFakeUpstream((_b, res) =>
      sendStream(res, [delta({ content: '<think>a' }), delta({ content: 'b</think>Yes' }, 'stop')]));
    closers.push(upstream.close);
    const folded = await foldEvents(engineFor(upstream.baseUrl).generate(request()));
    assert.deepEqual([folded.reasoning, folded.content], ['ab', 'Yes']);
  });

  const failureCases: [string, (res: import('node:http').ServerResponse) => void, number, string][] = [
    ['overloaded (429)', (res) => res.writeHead(429, { 'Retry-After': '7' }).end('{}'), 503, 'upstream_unavailable'],
    ['down for maintenance (503)', (res) => res.writeHead(503).end(), 503, 'upstream_unavailable'],
    ['faulty (500)', (res) => res.writeHead(500).end('boom'), 500, 'upstream_error'],
    ['misconfigured (401)', (res) => res.writeHead(401).end('{"error":{"message":"bad key"}}'), 500, 'upstream_error'],
    ['rejecting the request (400)', (res) => res.writeHead(400).end('{"error":{"message":"too long","code":"context_length_exceeded"}}'), 400, 'context_length_exceeded'],
  ];
  for (const [name, respond, status, code] of failureCases) {
    it(`maps an upstream that is ${name} to ${status} ${code}`, async () => {
      const upstream = await startFakeUpstream((_b, res) => respond(res));
      closers.push(upstream.close);
      await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request())),
        (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code);
    });
  }

  // Real upstreams' error shapes: llama.cpp and recent vLLM send a NUMERIC code, vLLM's older one
  // sits at the top level; messages may be anything. The caller gets the service's own error
  // (string code from the contract's list, its own type, a bounded message) whatever came (issue 21, finding 1).
  const ownError = (status: number, code: string) => (e: unknown) => {
    assert.ok(e instanceof ServiceError, String(e));
    assert.deepEqual([e.status, e.code, typeof e.type, typeof e.message], [status, code, 'string', 'string']);
    assert.ok(e.message.length <= 600, `a message of ${e.message.length} characters`);
    return true;
  };
  const shapes: [string, number, unknown, number, string][] = [
    ['llama.cpp: numeric code, exceed_context_size_error', 400, { error: { code: 400, message: 'the request exceeds the available context size', type: 'exceed_context_size_error' } }, 400, 'context_length_exceeded'],
    ['vLLM (recent): a numeric code nested', 400, { error: { message: 'bad temperature', type: 'BadRequestError', param: null, code: 400 } }, 400, 'upstream_rejected'],
    ['vLLM (older): the error at the top level', 400, { object: 'error', message: 'This model\'s maximum context length is 4096 tokens', type: 'BadRequestError', param: null, code: 400 }, 400, 'context_length_exceeded'],
    ['a code that is an object and a message that is a number', 422, { error: { code: { n: 1 }, message: 42, type: ['x'] } }, 400, 'upstream_rejected'],
    ['a code the contract does not list', 400, { error: { code: 'some_vendor_code', message: 'no' } }, 400, 'upstream_rejected'],
    ['an error that is a bare string', 400, { error: 'x'.repeat(100_000) }, 400, 'upstream_rejected'],
  ];
  for (const [name, status, body, wantStatus, wantCode] of shapes) {
    it(`normalises an upstream's refusal into the service's own error: ${name}`, async () => {
      const upstream = await startFakeUpstream((_b, res) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body)));
      closers.push(upstream.close);
      await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request())), ownError(wantStatus, wantCode));
    });
  }

  it('normalises an error event in the stream whatever its fields hold', async () => {
    const upstream = await startFakeUpstream((_b, res) => sendStream(res, [delta({ content: 'a' }), { error: { code: 500, message: { deep: 'x'.repeat(10_000) } } }]));
    closers.push(upstream.close);
    await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request({ stream: true }))), ownError(500, 'upstream_error'));
  });

  it('reads only well-typed fields from a chunk: numbers where text belongs, an object for arguments, counts as text', async () => {
    const upstream = await startFakeUpstream((_b, res) =>
      sendStream(res, [
        delta({ content: 7, reasoning_content: { a: 1 } }),
        delta({ content: 'ok', tool_calls: [{ index: 0, id: 12, function: { name: 3, arguments: { a: 1 } } }] }, 'tool_calls'),
        { choices: [], usage: { prompt_tokens: '5', completion_tokens: -2 } },
      ]));
    closers.push(upstream.close);
    const events = [];
    for await (const event of engineFor(upstream.baseUrl).generate(request({ stream: true }))) events.push(event);
    for (const event of events) {
      if (event.type === 'content' || event.type === 'reasoning') assert.equal(typeof event.text, 'string');
      if (event.type === 'tool_call') {
        assert.equal(typeof event.index, 'number');
        assert.equal(typeof event.arguments, 'string');
        assert.ok(event.id === undefined || (typeof event.id === 'string' && event.id !== ''));
        assert.ok(event.name === undefined || typeof event.name === 'string');
      }
    }
    const folded = await foldEvents((async function* () { yield* events; })());
    assert.equal(folded.content, 'ok');
    assert.equal(folded.toolCalls[0]?.function.arguments, '{"a":1}');
    assert.deepEqual(folded.usage, { promptTokens: 0, completionTokens: 0 });
  });

  it('fails a tool call whose index is not a small whole number with 500 upstream_error (an index of 1e9 would make an array that long)', async () => {
    for (const index of [1e9, -1, '0', 1.5]) {
      const upstream = await startFakeUpstream((_b, res) => sendStream(res, [delta({ tool_calls: [{ index, id: 'c', function: { name: 'f', arguments: '{}' } }] }, 'tool_calls')]));
      closers.push(upstream.close);
      await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request({ stream: true }))), ownError(500, 'upstream_error'));
    }
  });

  it('answers 503 when the upstream cannot be reached', async () => {
    await assert.rejects(foldEvents(engineFor('http://127.0.0.1:9/v1').generate(request())),
      (e: unknown) => e instanceof ServiceError && e.status === 503 && /unavailable/.test(e.message));
  });

  it('answers 503 when the upstream goes silent past the timeout', async () => {
    const upstream = await startFakeUpstream((_b, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(delta({ content: 'a' }))}\n\n`); // then nothing more
    });
    closers.push(upstream.close);
    await assert.rejects(foldEvents(engineFor(upstream.baseUrl, 300).generate(request({ stream: true }))),
      (e: unknown) => e instanceof ServiceError && e.status === 503 && /300 ms/.test(e.message));
  });

  it('waits UPSTREAM_ANSWER_TIMEOUT_MS, not the stream timeout, for an answer that is not streamed', async () => {
    const upstream = await startFakeUpstream((_b, res) => {
      setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
        choices: [{ index: 0, message: { role: 'assistant', content: 'late' }, finish_reason: 'stop' }],
      })), 1500); // past the stream timeout by more than undici's timer granularity (about a second)
    });
    closers.push(upstream.close);
    const folded = await foldEvents(engineFor(upstream.baseUrl, 300, 5000).generate(request()));
    assert.equal(folded.content, 'late');
    await assert.rejects(foldEvents(engineFor(upstream.baseUrl, 5000, 300).generate(request())),
      (e: unknown) => e instanceof ServiceError && e.status === 503 && /300 ms/.test(e.message));
  });

  it('aborts the upstream request when the client goes away', async () => {
    let upstreamClosed = false;
    const upstream = await startFakeUpstream((_b, res, req) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const timer = setInterval(() => res.write(`data: ${JSON.stringify(delta({ content: 'x' }))}\n\n`), 10);
      req.socket.on('close', () => {
        upstreamClosed = true;
        clearInterval(timer);
      });
    });
    closers.push(upstream.close);
    const client = new AbortController();
    let seen = 0;
    for await (const _ of engineFor(upstream.baseUrl).generate(request({ stream: true }, client.signal))) {
      if (++seen === 3) client.abort();
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(upstreamClosed, true);
  });

  // An answer the upstream did not finish must never pass for a complete one (issue 9, finding 3).
  const upstreamError = (e: unknown) => e instanceof ServiceError && e.status === 500 && e.code === 'upstream_error';

  it('fails a stream that ends without a finish_reason or [DONE] with 500 upstream_error', async () => {
    const upstream = await startFakeUpstream((_body, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(delta({ role: 'assistant', content: 'The answer is' }))}\n\n`);
    });
    closers.push(upstream.close);
    await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request())), (e: unknown) => upstreamError(e) && /before it was complete/.test((e as Error).message));
  });

  for (const [name, type, body] of [
    ['an HTML page', 'text/html', '<html><body>Bad gateway</body></html>'],
    ['half a JSON document', 'application/json', '{"id":"x","choices":[{"message":{"content":"hi'],
  ] as const) {
    it(`fails a 200 answer that is ${name} with 500 upstream_error`, async () => {
      const upstream = await startFakeUpstream((_body, res) => res.writeHead(200, { 'Content-Type': type }).end(body));
      closers.push(upstream.close);
      await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request())), upstreamError);
    });
  }

  it('fails an event that is not JSON with 500 upstream_error, not a 503', async () => {
    const upstream = await startFakeUpstream((_body, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end('data: {"choices": [oops\n\ndata: [DONE]\n\n');
    });
    closers.push(upstream.close);
    await assert.rejects(foldEvents(engineFor(upstream.baseUrl).generate(request())), upstreamError);
  });

  it('asks for one JSON answer when the caller does not stream, and reads <think> tags in it', async () => {
    const upstream = await startFakeUpstream((_body, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
      choices: [{ index: 0, message: { role: 'assistant', content: '<think>hmm</think>Yes' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 4 },
    })));
    closers.push(upstream.close);
    const folded = await foldEvents(engineFor(upstream.baseUrl).generate(request()));
    assert.deepEqual([folded.reasoning, folded.content, folded.usage], ['hmm', 'Yes', { promptTokens: 3, completionTokens: 4 }]);
    assert.equal(upstream.requests[0]!.stream, false);
    assert.equal(upstream.requests[0]!.stream_options, undefined);
  });

  it('reads a whole JSON completion from an upstream that does not stream', async () => {
    const upstream = await startFakeUpstream((_body, res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1 },
    })));
    closers.push(upstream.close);
    const folded = await foldEvents(engineFor(upstream.baseUrl).generate(request({ stream: true })));
    assert.deepEqual([folded.content, folded.finishReason, folded.usage], ['Hello', 'stop', { promptTokens: 3, completionTokens: 1 }]);
  });
  it('with UPSTREAM_CACHE_SALT, salts the upstream\'s prefix cache per key (hashed), and afresh for a request without a key', async () => {
    const upstream = await startFakeUpstream((_b, res) => sendStream(res, [delta({ content: 'Hi' }, 'stop')]));
    closers.push(upstream.close);
    const salted = createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 5000, cacheSalt: true });
    const salt = async (engine: ReturnType<typeof createUpstreamEngine>, scope?: string) => {
      await foldEvents(engine.generate({ ...request({ stream: true }), ...(scope ? { promptCacheScope: scope } : {}) }));
      return upstream.requests.at(-1)!.cache_salt;
    };
    const [a, a2, b, none, none2] = [await salt(salted, 'key_a'), await salt(salted, 'key_a'), await salt(salted, 'key_b'), await salt(salted), await salt(salted)];
    assert.equal(a, a2);
    assert.equal(new Set([a, b, none, none2]).size, 4);
    assert.ok([a, b, none].every((s) => typeof s === 'string' && /^[0-9a-f]{32}$/.test(s)), String(a));
    assert.equal(await salt(engineFor(upstream.baseUrl), 'key_a'), undefined, 'sent without the setting');
  });
});
