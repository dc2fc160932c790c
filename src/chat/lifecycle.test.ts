import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { after, describe, it } from 'node:test';
import type { Engine, GenerationEvent } from '../engines/engine.ts';
import { withQueue } from '../engines/queued-engine.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';
import { Guard } from '../guard/guard.ts';
import { scriptedTextScorer } from '../guard/scripted-text-scorer.ts';
import { Drain } from '../http/drain.ts';
import { Metrics } from '../http/metrics.ts';
import { createRedisStore } from '../store/redis-store.ts';
import type { Store } from '../store/store.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import type { Task } from '../tasks/task.ts';
import { testAttachmentLimits } from '../testing/attachment-limits.ts';
import { startFakeUpstream } from '../testing/fake-upstream.ts';
import { gate, heldEngine, openRequests, until } from '../testing/gates.ts';
import { startTestServer } from '../testing/test-server.ts';
import { LineWorkerError } from '../workers/line-worker.ts';
import { taskFailed } from '../errors/task-errors.ts';

// Issue 21: every request ends, and ends alone. With every generation slot busy, callers leave at
// each stage reachable in-process (the guard, a task, the queue, a URL fetch, generation,
// streaming), an upstream and a worker fail; afterwards every request has ended, no request is
// left open, no timer or temp directory of the service is left, every reservation is settled to
// the credit (embedded store, and Redis when REDIS_URL is set:
// scripts/with-redis.sh 6402 node --import tsx --test src/chat/lifecycle.test.ts), and /healthz
// answers. The test's timeout is only a hang detector.

const PARALLEL = 2;
/** One credit per completion token, prompts free: what a key pays is the sum of its answers' usage. */
const prices = { prompt: 0, completion: 1000 };
const CREDITS = 10_000;
const REDIS_URL = process.env.REDIS_URL;

/** A guard whose input check waits at `checking`, then passes. */
const slowGuard = (checking: ReturnType<typeof gate>) => new Guard(scriptedTextScorer(undefined, () => checking.passed()));

/** Test doubles of two tasks: OCR waits at `reading` (or for the caller to leave); translate's worker dies. */
const taskDoubles = (reading: ReturnType<typeof gate>): Task[] => [
  { name: 'ocr', run: async ({ signal }) => (await reading.passed(signal), { name: 'ocr', result: { documents: [] } } as never) },
  { name: 'translate', run: async () => { throw new LineWorkerError(taskFailed('translate', 'it stopped'), 'stopped'); } },
];

const lastUser = (messages: { role: string; content: string }[]) => messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';

/** Timers keeping the process alive: the service must leave none behind once its requests ended. */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
/** The service's temp directories (workers/temp-dirs.ts names them with this process's id). */
const tempDirs = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`service-video-${process.pid}-`) || n.startsWith(`stt-${process.pid}-`)).length;

/** A page server that never answers: it counts the fetches that reach it and those whose connection closed. */
async function heldPages() {
  const held: IncomingMessage[] = [];
  let closed = 0;
  const server = createServer((req) => {
    held.push(req);
    req.socket.once('close', () => closed++);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/scan.png`,
    arrived: () => held.length,
    closed: () => closed,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

async function scenario(store: Store | undefined) {
  const timersBefore = timers();
  const tempBefore = tempDirs();
  const pages = await heldPages();
  const slots = gate(); // the requests that keep every slot busy finish when it opens
  const midway = gate(); // never opened: a generation that has begun and waits for its caller to leave
  const checking = gate();
  const reading = gate();
  let queued = 0;
  const upstream = await startFakeUpstream((body, res) => {
    const fault = lastUser(body.messages as never);
    if (fault.includes('500')) res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":{"message":"boom","type":"server_error"}}');
    else if (fault.includes('cut')) (res.writeHead(200, { 'Content-Type': 'application/json' }), res.write('{"choices":['), res.destroy());
    else res.writeHead(200, { 'Content-Type': 'application/json' }).end('not json');
  });
  const upstreamEngine = createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 60_000 });
  const echo = createScriptedEngine(echoScript);
  const busy = heldEngine(echo, slots);
  const inner: Engine = {
    description: 'lifecycle',
    countTokens: (text) => text.split(/\s+/).filter(Boolean).length, // a word a token, as the echo script counts
    generate(request) {
      const text = lastUser(request.messages);
      if (text.startsWith('upstream')) return upstreamEngine.generate(request);
      if (text.startsWith('busy')) return busy.generate(request);
      if (text.startsWith('midway')) {
        return (async function* (): AsyncGenerator<GenerationEvent> {
          yield { type: 'content', text: 'first ' };
          await midway.passed(request.signal);
          yield* echo.generate(request);
        })();
      }
      return echo.generate(request);
    },
  };
  const engine = withQueue(inner, { concurrency: PARALLEL, maxWaiting: 50, observer: { waiting: (n) => void (queued = n), waited: () => {} } });
  const metrics = new Metrics();
  const drain = new Drain();
  const server = await startTestServer({
    engine, metrics, drain, guard: slowGuard(checking), tasks: new TaskRegistry(taskDoubles(reading)),
    // A fetch deadline far past the hang detector: a fetch that outlives its caller shows as a hang.
    attachmentLimits: testAttachmentLimits({ fetch: { maxBytes: 1024 * 1024, timeoutMs: 3_600_000, maxRedirects: 1, allowLoopback: true } }),
    quota: { prices, defaults: { rpm: null, tpm: null } }, ...(store ? { store } : {}),
  });
  const origin = server.baseUrl.replace(/\/v1$/, '');
  const rich = await server.keys.create('lifecycle', { credits: CREDITS });
  const poor = await server.keys.create('poor', { credits: 1 });

  type Outcome = { kind: 'answered'; completionTokens: number } | { kind: 'refused'; status: number } | { kind: 'aborted' };
  const requests: Promise<Outcome>[] = [];
  /** Sends a request; `leave` aborts it. Every request's promise settles with how it ended. */
  const send = (content: string | unknown[], extra: { system?: string; stream?: boolean; key?: string; maxTokens?: number } = {}) => {
    const leaving = new AbortController();
    const messages = [...(extra.system ? [{ role: 'system', content: extra.system }] : []), { role: 'user', content }];
    const body = { model: 'service', messages, max_tokens: extra.maxTokens ?? 50, ...(extra.stream ? { stream: true } : {}) };
    let firstChunk!: () => void;
    const streaming = new Promise<void>((r) => (firstChunk = r));
    const outcome = (async (): Promise<Outcome> => {
      try {
        const res = await fetch(`${server.baseUrl}/chat/completions`, {
          method: 'POST', signal: leaving.signal, body: JSON.stringify(body),
          headers: { Authorization: `Bearer ${extra.key ?? rich.key}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true' },
        });
        if (res.status !== 200) return (await res.arrayBuffer(), { kind: 'refused', status: res.status });
        if (extra.stream) {
          const reader = res.body!.getReader();
          for (;;) {
            const { done } = await reader.read();
            firstChunk();
            if (done) return { kind: 'refused', status: 200 }; // a stream that ends unaborted here ended with an error frame
          }
        }
        const answer = (await res.json()) as { usage: { completion_tokens: number } };
        return { kind: 'answered', completionTokens: answer.usage.completion_tokens };
      } catch {
        if (leaving.signal.aborted) return { kind: 'aborted' };
        throw new Error(`request "${content}" failed without being aborted`);
      }
    })();
    requests.push(outcome);
    return { leave: () => leaving.abort(), streaming, outcome };
  };

  try {
    // Every slot busy.
    for (let i = 0; i < PARALLEL; i++) send(`busy ${i} a b c`);
    await until(() => slots.arrived() === PARALLEL);
    // Callers who leave while they wait for a slot.
    const waiting = [send('queued one'), send('queued two'), send('queued three')];
    await until(() => queued === 3);
    for (const r of waiting) r.leave();
    await until(() => queued === 0);
    // A caller who leaves during the guard's check: its request then reaches the queue, caller gone.
    const guarded = send('guarded d e', { system: '<guard>S1</guard>' });
    // A caller who leaves while a task (OCR) reads.
    const reader = send('read this', { system: '<task>ocr</task>' });
    await until(() => checking.arrived() === 1 && reading.arrived() === 1);
    guarded.leave();
    reader.leave();
    await Promise.all([guarded.outcome, reader.outcome]);
    // Once the service has seen both callers leave (their responses closed), the guard passes.
    await until(() => drain.size === PARALLEL);
    checking.open();
    // The guarded request goes on to the queue while every slot is still busy: it waits there (as
    // it did, for ever) or has ended with the OCR one; only then do the slots free.
    await until(async () => queued === 1 || (await openRequests(metrics)) === PARALLEL);
    // A worker that dies, an upstream that fails three ways (refused, each, with an error).
    const faults = [send('x', { system: '<task>translate</task>' }), send('upstream 500'), send('upstream cut'), send('upstream garbage')];
    // A key whose balance cannot cover its request.
    const broke = send('f g h', { key: poor.key });
    await Promise.all([broke.outcome]);
    // The slots free; callers who leave during generation, streamed or not.
    slots.open();
    const streamed = send('midway streamed', { stream: true });
    await streamed.streaming;
    streamed.leave();
    const whole = send('midway whole');
    await until(() => midway.arrived() === 2);
    whole.leave();
    await Promise.all(faults.map((f) => f.outcome));
    // A caller who leaves while an image it named by URL is being fetched: the fetch stops.
    const fetching = send([{ type: 'text', text: 'read this' }, { type: 'image_url', image_url: { url: pages.url } }], { system: '<task>ocr</task>' });
    await until(() => pages.arrived() === 1);
    fetching.leave();
    await fetching.outcome;
    await until(() => pages.closed() === 1);
    // And plain answers after all that.
    send('after one two');
    send('after three');

    const outcomes = await Promise.all(requests);
    await until(async () => (await openRequests(metrics)) === 0);
    const count = (kind: Outcome['kind']) => outcomes.filter((o) => o.kind === kind).length;
    assert.deepEqual({ answered: count('answered'), refused: count('refused'), aborted: count('aborted') },
      { answered: 4, refused: 5, aborted: 8 }, JSON.stringify(outcomes));
    // The answers' tokens, and the one token ("first") each caller who left mid-generation had been
    // given: what was generated is paid (issue 22).
    const spent = outcomes.reduce((sum, o) => sum + (o.kind === 'answered' ? o.completionTokens : 0), 0) + 2;
    assert.equal(await server.store.credits(rich.record.id), CREDITS - spent, `${spent} credits spent on the answers`);
    assert.equal(await server.store.credits(poor.record.id), 1);
    assert.equal(queued, 0);
    assert.equal((await fetch(`${origin}/healthz`)).status, 200);
  } finally {
    await server.close();
    await upstream.close();
    await pages.close();
  }
  // Nothing of the service's is left: the test's own timers (until's) have all fired by now.
  assert.equal(timers(), timersBefore, `timers: ${process.getActiveResourcesInfo().join(', ')}`);
  assert.equal(tempDirs(), tempBefore);
}

describe('every request ends, and its reservation is settled, whatever happens on the way', { timeout: 180_000 }, () => {
  it('on the embedded store', async () => {
    await scenario(undefined);
  });

  const stores: Store[] = [];
  after(() => Promise.all(stores.map((s) => s.close())));
  it('on Redis', { skip: REDIS_URL ? false : 'REDIS_URL is not set; run: scripts/with-redis.sh 6402 node --import tsx --test src/chat/lifecycle.test.ts' }, async () => {
    const store = createRedisStore({ url: REDIS_URL!, keyPrefix: `lifecycle-${process.pid}-${Date.now()}:`, log: { warn: () => {} } });
    stores.push(store);
    await scenario(store);
  });
});
