import assert from 'node:assert/strict';
import { createHook } from 'node:async_hooks';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { createScriptedEngine } from './scripted-engine.ts';
import type { GenerationEvent } from './engine.ts';
import { tapEvents } from './tap-events.ts';
import { startTestServer, TEST_KEY } from '../testing/test-server.ts';

async function* source(closed: string[], items = [1, 2, 3]) {
  try {
    for (const n of items) yield n;
  } finally {
    closed.push('source');
  }
}

describe('tapEvents', () => {
  it('passes each event through the tap, which may replace it, in order', async () => {
    const seen: number[] = [];
    const out: number[] = [];
    for await (const n of tapEvents(source([]), { event: (n) => (seen.push(n), n === 2 ? 20 : undefined) })) out.push(n);
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual(out, [1, 20, 3]);
  });

  it('passes the source\'s failure through `failed`, which may put another in its place', async () => {
    const failing = (async function* () {
      yield 1;
      throw new Error('upstream');
    })();
    const tapped = tapEvents(failing, { failed: (err) => new Error(`seen: ${(err as Error).message}`) });
    assert.deepEqual(await tapped.next(), { done: false, value: 1 });
    await assert.rejects(tapped.next(), /seen: upstream/);
  });

  it('closes its source when closed, and when the tap throws', async () => {
    const closed: string[] = [];
    const tapped = tapEvents(source(closed), {});
    await tapped.next();
    await tapped.return!();
    assert.deepEqual(closed, ['source']);

    const throwing = tapEvents(source(closed), { event: () => { throw new Error('tap'); } });
    await assert.rejects(throwing.next(), /tap/);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(closed, ['source', 'source']);
  });
});

/** Promises made in this process while one completion of `words` words is answered as JSON. */
async function promisesFor(baseUrl: string, words: number): Promise<number> {
  let made = 0;
  const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && made++) }).enable();
  try {
    // node:http with listeners (no promises on the client's side), a different prompt each time (no cache hit).
    const status = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ model: 'service', max_tokens: words, messages: [{ role: 'user', content: `${words} ${'w '.repeat(words)}` }] });
      const req = request(`${baseUrl}/chat/completions`, {
        method: 'POST', headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' },
      }, (res) => res.on('data', () => {}).on('end', () => resolve(res.statusCode!)));
      req.on('error', reject).end(body);
    });
    assert.equal(status, 200);
  } finally {
    hook.disable();
  }
  return made;
}

describe('the pass-through stages (issue 26: CPU per streamed event)', () => {
  it('cost one promise each per event: the meter, the cache\'s store and the outcome record', async () => {
    // One event per word, and done: the engine's own promises per event are the same whatever the stages do.
    const engine = createScriptedEngine((req) => [
      ...Array.from({ length: req.maxTokens ?? 1 }, (): GenerationEvent => ({ type: 'content', text: 'w ' })),
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: req.maxTokens ?? 1 } },
    ]);
    const server = await startTestServer({ engine, validateResponses: false });
    try {
      await promisesFor(server.baseUrl, 10); // warm: the validator's and the store's first-use work
      const perEvent = ((await promisesFor(server.baseUrl, 400)) - (await promisesFor(server.baseUrl, 200))) / 200;
      // Measured: 20 per event with the three as async generators, 11 with them tapping the stream.
      assert.ok(perEvent <= 14, `${perEvent} promises per event`);
    } finally {
      await server.close();
    }
  });
});
