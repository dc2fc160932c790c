import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import type { GenerationEvent } from '../engines/engine.ts';
import { withQueue } from '../engines/queued-engine.ts';
import { createScriptedEngine } from '../engines/scripted-engine.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';
import { delta, sendStream, startFakeUpstream } from '../testing/fake-upstream.ts';
import { startTestServer, TEST_KEY } from '../testing/test-server.ts';

/**
 * Promises made in this process while one completion of `words` words is answered. The client is
 * node:http with listeners (no promises of its own), and each prompt differs (no cache hit).
 */
let asked = 0;
async function promisesFor(baseUrl: string, words: number, stream = false): Promise<number> {
  let made = 0;
  const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && made++) }).enable();
  try {
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const body = JSON.stringify({ model: 'service', max_tokens: words, stream, messages: [{ role: 'user', content: `${asked++} ${words} ${'w '.repeat(words)}` }] });
      const req = request(`${baseUrl}/chat/completions`, {
        method: 'POST', headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject).end(body);
    });
    assert.equal(answer.status, 200);
    if (stream) assert.equal(answer.text.split('"content":"w "').length - 1, words);
    else assert.ok(answer.text.includes(`"content":"${'w '.repeat(words)}"`));
  } finally {
    hook.disable();
  }
  return made;
}

/**
 * The promises each event of an answer costs: the difference between answers of 400 and 200
 * events, the least of three tries (the process's other work, a timer's, can add a stray promise
 * to one count, never take one away).
 */
async function promisesPerEvent(baseUrl: string, stream: boolean): Promise<number> {
  await promisesFor(baseUrl, 10, stream); // warm: the validator's and the store's first-use work
  const tries: number[] = [];
  for (let i = 0; i < 3; i++) tries.push(((await promisesFor(baseUrl, 400, stream)) - (await promisesFor(baseUrl, 200, stream))) / 200);
  return Math.min(...tries);
}

// Issue 26: each layer an event passes through costs promises (and the request scope's promise
// hook on each), and a streamed answer crosses every layer once per event.
describe('what an event of an answer costs, in promises', () => {
  it('through the pass-through stages (the meter, the cache\'s store, the outcome record): one each', async () => {
    const engine = createScriptedEngine((req) => [
      ...Array.from({ length: req.maxTokens ?? 1 }, (): GenerationEvent => ({ type: 'content', text: 'w ' })),
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: req.maxTokens ?? 1 } },
    ]);
    const server = await startTestServer({ engine, validateResponses: false });
    try {
      const perEvent = await promisesPerEvent(server.baseUrl, false);
      // Measured: 20 per event with the three as async generators, 11 with them tapping the stream,
      // 10 with the quota's settlement a `then` instead of an async function awaiting each event.
      assert.ok(perEvent <= 10, `${perEvent} promises per event`);
    } finally {
      await server.close();
    }
  });

  it('streamed from an upstream through the queue and the SSE writer', async () => {
    const upstream = await startFakeUpstream((body, res) => sendStream(res, [
      ...Array.from({ length: Number(body.max_tokens) }, () => delta({ content: 'w ' })),
      { ...delta({}, 'stop'), usage: { prompt_tokens: 1, completion_tokens: Number(body.max_tokens) } },
    ]));
    const engine = withQueue(createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 5000 }), { concurrency: 4, maxWaiting: 4 });
    const server = await startTestServer({ engine, validateResponses: false });
    try {
      const perEvent = await promisesPerEvent(server.baseUrl, true);
      // Measured: 26 per event with the queue delegating with yield* to the upstream engine, which
      // delegated to a generator reading the stream; 19 with the queue a plain iterator and the
      // stream read by a synchronous reader the engine yields from; 15 with the chunks made by a
      // plain iterator instead of an async generator; 14 with the quota's settlement a `then`; 12
      // with the upstream engine a plain iterator over each read's events instead of a generator.
      assert.ok(perEvent <= 12, `${perEvent} promises per event`);
    } finally {
      await server.close();
      await upstream.close();
    }
  });
});
