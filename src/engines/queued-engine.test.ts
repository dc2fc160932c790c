import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { foldEvents } from './fold-events.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import { ServiceError } from '../errors/service-error.ts';
import type { Engine } from './engine.ts';
import { withQueue } from './queued-engine.ts';

/** An engine whose generations finish only when the test says so. */
function gatedEngine() {
  const started: string[] = [];
  const gates = new Map<string, () => void>();
  let running = 0;
  let maxRunning = 0;
  const engine: Engine = {
    description: 'gated',
    async *generate(request) {
      const name = request.messages[0]!.content;
      started.push(name);
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise<void>((resolve) => gates.set(name, resolve));
      running--;
      yield { type: 'done', finishReason: 'stop', usage: { promptTokens: 0, completionTokens: 0 } };
    },
  };
  const release = async (name: string) => {
    while (!gates.has(name)) await new Promise((r) => setTimeout(r, 1));
    gates.get(name)!();
  };
  return { engine, started, release, maxRunning: () => maxRunning };
}

const ask = (engine: Engine, name: string, signal = new AbortController().signal) =>
  foldEvents(engine.generate(normalizeRequest({ model: 'service', messages: [{ role: 'user', content: name }] } as never, signal)));

describe('withQueue', () => {
  it('runs at most `concurrency` at once and starts the waiting ones in arrival order', async () => {
    const gated = gatedEngine();
    const queued = withQueue(gated.engine, { concurrency: 2, maxWaiting: 10 });
    const all = ['a', 'b', 'c', 'd', 'e'].map((n) => ask(queued, n));
    for (const n of ['a', 'b', 'c', 'd', 'e']) await gated.release(n);
    await Promise.all(all);
    assert.deepEqual(gated.started, ['a', 'b', 'c', 'd', 'e']);
    assert.equal(gated.maxRunning(), 2);
  });

  it('refuses at once with 503 queue_full and Retry-After when the queue is full', async () => {
    const gated = gatedEngine();
    const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 1 });
    const first = ask(queued, 'a');
    const second = ask(queued, 'b');
    await assert.rejects(ask(queued, 'c'), (e: unknown) =>
      e instanceof ServiceError && e.status === 503 && e.code === 'queue_full' && e.headers['Retry-After'] === '1');
    await gated.release('a');
    await gated.release('b');
    await Promise.all([first, second]);
  });

  it('never starts a generation whose stream was closed while it waited (a shutdown closes it without aborting)', async () => {
    const gated = gatedEngine();
    const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 10 });
    const first = ask(queued, 'a');
    const waiting = queued.generate(normalizeRequest({ model: 'service', messages: [{ role: 'user', content: 'b' }] } as never, new AbortController().signal))[Symbol.asyncIterator]();
    const read = waiting.next(); // waits for the slot
    const closed = waiting.return!();
    await gated.release('a');
    await first;
    assert.deepEqual(await read, { done: true, value: undefined });
    await closed;
    assert.deepEqual(gated.started, ['a']);
    const third = ask(queued, 'c'); // the slot came back
    await gated.release('c');
    await third;
    assert.deepEqual(gated.started, ['a', 'c']);
  });

  it('gives up the place of a request whose client left while it waited', async () => {
    const gated = gatedEngine();
    const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 5 });
    const first = ask(queued, 'a');
    const leaving = new AbortController();
    const abandoned = ask(queued, 'b', leaving.signal);
    const third = ask(queued, 'c');
    leaving.abort(new Error('client left'));
    await assert.rejects(abandoned, /client left/);
    await gated.release('a');
    await gated.release('c');
    await Promise.all([first, third]);
    assert.deepEqual(gated.started, ['a', 'c']);
  });

  // Issue 21, finding 3: a signal already aborted when the request reached the queue never fired
  // its listener, and the turn was dropped without an answer, so the request waited for ever.
  it('refuses at once, with the abort reason, a request whose client left before it reached the queue', async () => {
    const gated = gatedEngine();
    const lengths: number[] = [];
    const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 5, observer: { waiting: (n) => lengths.push(n), waited: () => {} } });
    const first = ask(queued, 'a');
    const left = new AbortController();
    left.abort(new Error('client left before its turn'));
    const abandoned = ask(queued, 'b', left.signal);
    const third = ask(queued, 'c');
    await assert.rejects(abandoned, /client left before its turn/);
    await gated.release('a');
    await gated.release('c');
    await Promise.all([first, third]);
    assert.deepEqual(gated.started, ['a', 'c']);
    assert.equal(lengths.at(-1), 0, 'nobody is left waiting');
  });

  it('never starts a generation for a client that left, even when a slot is free', async () => {
    const gated = gatedEngine();
    const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 5 });
    const left = new AbortController();
    left.abort(new Error('gone'));
    await assert.rejects(ask(queued, 'a', left.signal), /gone/);
    const next = ask(queued, 'b');
    await gated.release('b');
    await next;
    assert.deepEqual(gated.started, ['b'], 'the slot was not lost either');
  });

  it('tells its observer (the metrics) the queue\'s length as it changes, and each wait for a slot', async () => {
    const gated = gatedEngine();
    let clock = 0;
    const lengths: number[] = [];
    const waits: number[] = [];
    const queued = withQueue(gated.engine, {
      concurrency: 1, maxWaiting: 5, now: () => clock, observer: { waiting: (n) => lengths.push(n), waited: (ms) => waits.push(ms) },
    });
    const all = ['a', 'b', 'c'].map((n) => ask(queued, n));
    const startedWhen = async (name: string) => {
      while (!gated.started.includes(name)) await new Promise((r) => setTimeout(r, 1));
    };
    clock = 250;
    await gated.release('a');
    await startedWhen('b');
    clock = 400;
    await gated.release('b');
    await startedWhen('c');
    await gated.release('c');
    await Promise.all(all);
    assert.deepEqual(lengths, [1, 2, 1, 0]);
    assert.deepEqual(waits, [0, 250, 400]);
  });

  describe('Retry-After on queue_full, from how long recent generations held a slot', () => {
    /** Fills a one-slot queue with two waiting after `history` generations of `seconds` each, then asks once more. */
    async function refusalAfter(history: number, seconds: number) {
      let clock = 0;
      const gated = gatedEngine();
      const queued = withQueue(gated.engine, { concurrency: 1, maxWaiting: 2, now: () => clock });
      for (let i = 0; i < history; i++) {
        const done = ask(queued, `old${i}`);
        while (!gated.started.includes(`old${i}`)) await new Promise((r) => setTimeout(r, 1));
        clock += seconds * 1000;
        await gated.release(`old${i}`);
        await done;
      }
      const held = ['a', 'b', 'c'].map((n) => ask(queued, n));
      const refusal = await ask(queued, 'd').then(() => assert.fail('not refused'), (e: unknown) => e as ServiceError);
      for (const n of ['a', 'b', 'c']) await gated.release(n);
      await Promise.all(held);
      assert.equal(refusal.code, 'queue_full');
      return { seconds: Number(refusal.headers['Retry-After']), message: refusal.message };
    }

    it('is 1 s before any generation has finished', async () => {
      assert.equal((await refusalAfter(0, 0)).seconds, 1);
    });

    it('covers the waiting requests: two waiting for one slot after 10 s generations', async () => {
      const { seconds, message } = await refusalAfter(3, 10);
      assert.ok(seconds >= 20 && seconds <= 600, `Retry-After ${seconds}`);
      assert.match(message, new RegExp(`retry in about ${seconds} s`, 'i'));
    });

    it('is capped at 600 s', async () => {
      assert.equal((await refusalAfter(2, 1000)).seconds, 600);
    });
  });
});
