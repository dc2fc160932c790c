import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import type { Engine, GenerationEvent } from '../engines/engine.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';
import { withVerifiedOutput } from '../engines/verified-output.ts';
import { invalidRequest } from '../errors/service-error.ts';
import { TEXT_CODES } from '../guard/codes.ts';
import { Guard, type TextScorer } from '../guard/guard.ts';
import { createRedisStore } from '../store/redis-store.ts';
import type { Store } from '../store/store.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import type { PrecontextEntry, Task, TaskName } from '../tasks/task.ts';
import { startFakeUpstream } from '../testing/fake-upstream.ts';
import { dataUrl } from '../testing/fixtures.ts';
import { startTestServer, type TestServer } from '../testing/test-server.ts';

// Issue 22, the ledger: a few hundred mixed requests — chat, streamed, every task, MoA on images
// and text files, guard blocks on input and mid-stream, cache hits, tool calls, JSON that fails
// its check, a prompt too long, upstream faults and an upstream without usage, callers who leave
// mid-generation — on the embedded store and on three instances sharing Redis
// (scripts/with-redis.sh 6406 node --import tsx --test src/chat/ledger.test.ts). At the end each
// balance is its start minus the prices of what `usage` reported, to the credit, and no request
// that did work was free. Before issue 22 every task answered usage 0 and paid nothing.

/** Prices the test computes by itself: 1 credit a prompt token, 2 a completion token, and per unit. */
const UNIT_PRICES: Record<string, number> = { ocr_pages: 3, detected_images: 2, audio_seconds: 0.5, searches: 5, pages_fetched: 4, translated_kchars: 1 };
const prices = { prompt: 1000, completion: 2000, units: UNIT_PRICES };
interface WireUsage { prompt_tokens: number; completion_tokens: number; task_units?: Record<string, number>; credits?: number }
const priceOf = (u: WireUsage) => Math.max(0, Math.ceil(u.prompt_tokens + 2 * u.completion_tokens
  + Object.entries(u.task_units ?? {}).reduce((sum, [unit, n]) => sum + n * UNIT_PRICES[unit]!, 0) - 1e-9));

const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'white' } }).png().toBuffer();
const image = { type: 'image_url', image_url: { url: dataUrl('image/png', png) } };
const textFile = { type: 'file', file: { filename: 'notes.txt', file_data: dataUrl('text/plain', Buffer.from('alpha beta gamma delta\n'.repeat(20))) } };

/** Task doubles that report what a real one would: pages, images, seconds, a search, a fetch, characters. */
const page = (i: number) => ({ source: 'messages[1].content[1]', page: i + 1, method: 'ocr' as const, width: 8, height: 8, text: 'read', confidence: 0.9, lines: [] });
const detected = { source: 'messages[1].content[1]', width: 8, height: 8 };
const doubles: Record<TaskName, (text: string, onTokens?: (u: { promptTokens: number; completionTokens: number }) => void) => PrecontextEntry> = {
  ocr: (text) => ({ name: 'ocr', result: { text: 'read from the page', pages: Array.from({ length: 1 + (text.length % 3) }, (_, i) => page(i)) } }),
  object_detection: () => ({ name: 'object_detection', result: { images: [{ ...detected, objects: [] }] } }),
  gui_detection: () => ({ name: 'gui_detection', result: { images: [{ ...detected, elements: [] }] } }),
  speech_to_text: (text) => ({ name: 'stt', result: { text: 'spoken', language: 'en', duration_seconds: 3.2 + text.length, segments: [] } }),
  translate: (text) => ({ name: 'translate', result: { source_language: 'en', target_language: 'es', text, translated_text: text, engine: 'double' } }),
  web_search: (text) => ({ name: 'web_search', result: { query: text, provider: 'double', results: [] } }),
  scraper: (_text, onTokens) => {
    onTokens?.({ promptTokens: 40, completionTokens: 9 }); // its extraction by the model
    return { name: 'scraper', result: { url: 'https://example.com/', title: 't', text: 'x', links: [], tables: [], metadata: {}, extracted: {} } };
  },
};
const tasks = () => new TaskRegistry((Object.keys(doubles) as TaskName[]).map((name): Task => ({
  name, run: async (input) => doubles[name](input.text, input.onTokens),
})));

/** "KILL" is S1; anything else is safe. */
const scorer: TextScorer = {
  thresholds: async () => ({ harmful: 0.5, code: 0.5 }),
  score: async (texts) => texts.map((text) => [{
    harmful: text.includes('KILL') ? 0.99 : 0.01,
    codes: Object.fromEntries(TEXT_CODES.map((c) => [c, c === 'S1' && text.includes('KILL') ? 0.97 : 0.01])) as never,
  }]),
};

const words = (text: string): GenerationEvent[] => text.split(/(?<= )/).map((t) => ({ type: 'content', text: t }));
const lastUser = (messages: { role: string; content: string }[]) => messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';

/** The engine double: what the request's first word asks for, from the model or the fake upstream. */
function engineFor(upstreamUrl: string): Engine {
  const upstream = createUpstreamEngine({ baseUrl: upstreamUrl, model: 'm', timeoutMs: 60_000 });
  const slow = createScriptedEngine(echoScript, 20);
  const scripted = createScriptedEngine((request) => {
    const text = lastUser(request.messages);
    if (text.startsWith('toolcall')) {
      return [{ type: 'tool_call', index: 0, id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}' },
        { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 11, completionTokens: 6 } }];
    }
    if (text.startsWith('unsafe')) return [...words('A calm start. Then KILL them. More text. '), { type: 'done', finishReason: 'stop', usage: { promptTokens: 7, completionTokens: 8 } }];
    if (text.startsWith('badjson')) return [{ type: 'content', text: 'not json' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 3 } }];
    if (text.startsWith('toolong')) throw invalidRequest('too long for the context', 'context_length_exceeded', 'messages');
    return echoScript(request);
  });
  return {
    description: 'ledger',
    countTokens: (text) => text.split(/\s+/).filter(Boolean).length,
    generate(request) {
      const text = lastUser(request.messages);
      if (text.startsWith('upstream')) return upstream.generate(request);
      if (text.startsWith('slow')) return slow.generate(request);
      return withVerifiedOutput(scripted).generate(request);
    },
  };
}

interface Outcome { status: number; usage?: WireUsage; cached?: boolean; didWork: boolean; kind: string }

async function ledger(stores: (Store | undefined)[]) {
  const upstream = await startFakeUpstream((body, res) => {
    const text = lastUser(body.messages as never);
    if (text.includes('500')) res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":{"message":"boom","type":"server_error"}}');
    else if (text.includes('cut')) (res.writeHead(200, { 'Content-Type': 'application/json' }), res.write('{"choices":['), res.destroy());
    else if (text.includes('nousage')) {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
        id: 'x', object: 'chat.completion', created: 1, model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'an answer of six words here' }, finish_reason: 'stop' }],
      }));
    } else res.writeHead(200, { 'Content-Type': 'application/json' }).end('not json');
  });
  const servers: TestServer[] = [];
  for (const store of stores) {
    servers.push(await startTestServer({
      engine: engineFor(upstream.baseUrl), tasks: tasks(), guard: new Guard(scorer),
      quota: { prices, defaults: { rpm: null, tpm: null } }, ...(store ? { store } : {}),
    }));
  }
  const START = 1_000_000;
  const main = await servers[0]!.keys.create('ledger', { credits: START });
  let turn = 0;
  const post = (body: object, key = main.key, signal?: AbortSignal) => fetch(`${servers[turn++ % servers.length]!.baseUrl}/chat/completions`, {
    method: 'POST', body: JSON.stringify(body), signal,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
  });
  const user = (content: unknown, system?: string, extra: object = {}) => ({
    model: 'service', max_tokens: 40, ...extra,
    messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content }],
  });
  const read = async (res: Response, kind: string, didWork: boolean, streamed = false): Promise<Outcome> => {
    if (res.status !== 200) return (await res.arrayBuffer(), { status: res.status, didWork, kind });
    if (!streamed) {
      const body = (await res.json()) as { usage: WireUsage; vcache: boolean };
      return { status: 200, usage: body.usage, cached: body.vcache, didWork: didWork && !body.vcache, kind };
    }
    const chunks = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
    const last = chunks.at(-1);
    if (last.error) return { status: 500, didWork, kind };
    return { status: 200, usage: last.usage, cached: chunks[0]?.vcache === true, didWork: didWork && chunks[0]?.vcache !== true, kind };
  };
  const bypass = { 'x-service-bypass-cache': 'true' };
  void bypass;
  const stream = { stream: true, stream_options: { include_usage: true } };
  const kinds: [string, (i: number) => Promise<Outcome>][] = [
    ['chat', async (i) => read(await post(user(`plain question number ${i} here`)), 'chat', true)],
    ['streamed', async (i) => read(await post(user(`streamed question ${i} a b`, undefined, stream)), 'streamed', true, true)],
    ['cached', async (i) => read(await post(user(`the same question ${i % 3}`)), 'cached', true)],
    ...(Object.keys(doubles) as TaskName[]).map((name): [string, (i: number) => Promise<Outcome>] =>
      [name, async (i) => read(await post(user(name === 'speech_to_text' || name === 'ocr' || name.endsWith('detection') ? [{ type: 'text', text: `item ${i}` }, image] : `item ${i} https://example.com/`,
        `<task>${name}</task>`, { response_format: { type: 'json_object' } })), name, true)]),
    ['moa image', async (i) => read(await post(user([{ type: 'text', text: `what is in it ${i}` }, image])), 'moa image', true)],
    ['moa text file', async (i) => read(await post(user([{ type: 'text', text: `summarise ${i}` }, textFile], undefined, { max_tokens: 5 })), 'moa text file', true)],
    ['guard input', async (i) => read(await post(user(`please KILL ${i}`, '<guard>S1</guard>')), 'guard input', false)],
    ['guard input moa', async (i) => read(await post(user([{ type: 'text', text: `KILL ${i}` }, image], '<guard>S1</guard>')), 'guard input moa', true)],
    ['guard stream', async (i) => read(await post(user(`unsafe ${i}`, '<guard>S1</guard>', stream)), 'guard stream', true, true)],
    ['guard whole', async (i) => read(await post(user(`unsafe ${i}`, '<guard>S1</guard>')), 'guard whole', true)],
    ['tool call', async (i) => read(await post(user(`toolcall ${i}`, undefined, {
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } } }],
    })), 'tool call', true)],
    ['too long', async (i) => read(await post(user(`toolong ${i}`)), 'too long', false)],
    ['upstream 500', async (i) => read(await post(user(`upstream 500 ${i}`)), 'upstream 500', false)],
    ['upstream cut', async (i) => read(await post(user(`upstream cut ${i}`)), 'upstream cut', false)],
    ['upstream nousage', async (i) => read(await post(user(`upstream nousage ${i}`, undefined, { ...bypass })), 'upstream nousage', true)],
  ];
  try {
    // About 250 requests, 12 at a time, every kind in turn.
    const outcomes: Outcome[] = [];
    const ROUNDS = 12;
    const jobs = Array.from({ length: ROUNDS * kinds.length }, (_, n) => () => kinds[n % kinds.length]![1](Math.floor(n / kinds.length)));
    const queue = [...jobs];
    await Promise.all(Array.from({ length: 12 }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) {
        outcomes.push(await job());
        if (process.env.LEDGER_DEBUG) console.error('done', outcomes.length, outcomes.at(-1)!.kind);
      }
    }));
    // Output that fails its check twice: 500 output_validation_failed, two passes of 5 + 3 tokens, paid.
    const checked = await servers[0]!.keys.create('failed checks', { credits: 1000 });
    for (let i = 0; i < 4; i++) {
      const res = await post(user(`badjson ${i}`, undefined, { response_format: { type: 'json_object' } }), checked.key);
      assert.equal(res.status, 500);
      await res.arrayBuffer();
    }
    assert.equal(await servers[0]!.store.credits(checked.record.id), 1000 - 4 * 2 * (5 + 2 * 3), 'four answers that failed their check, two passes each');
    // Callers who leave mid-generation, each on a key of its own, so what each paid is seen.
    const leavers = [];
    for (let i = 0; i < 6; i++) {
      const leaver = await servers[0]!.keys.create(`leaver ${i}`, { credits: 1000 });
      const leaving = new AbortController();
      const res = await post(user(`slow ${'w '.repeat(30)}`, undefined, i % 2 ? stream : {}), leaver.key, leaving.signal);
      if (i % 2) await res.body!.getReader().read(); // the first chunk came: the generation is under way
      else await new Promise((r) => setTimeout(r, 100));
      leaving.abort();
      await res.arrayBuffer().catch(() => {});
      leavers.push(leaver.record.id);
    }

    const byKind = new Map<string, Outcome[]>();
    for (const o of outcomes) byKind.set(o.kind, [...(byKind.get(o.kind) ?? []), o]);
    const summary = Object.fromEntries([...byKind].map(([k, os]) => [k, os.map((o) => o.status).join(',')]));
    // Every kind answered as it should (the faults and the refusals are not 200).
    for (const [kind, os] of byKind) {
      const expected = ['too long'].includes(kind) ? 400 : ['upstream 500', 'upstream cut'].includes(kind) ? 502 : 200;
      assert.ok(os.every((o) => o.status === expected || (expected === 502 && o.status >= 500)), `${kind}: ${JSON.stringify(summary[kind])}`);
    }
    const answered = outcomes.filter((o) => o.usage);
    for (const o of answered) {
      assert.equal(o.usage!.credits, o.cached ? 0 : priceOf(o.usage!), `${o.kind}: usage.credits is the price of its usage (${JSON.stringify(o.usage)})`);
      if (o.didWork) assert.ok(o.usage!.credits! > 0, `${o.kind} did work and was free: ${JSON.stringify(o.usage)}`);
    }
    assert.ok(answered.some((o) => o.cached), 'some answers came from the cache');
    const due = answered.reduce((sum, o) => sum + (o.cached ? 0 : priceOf(o.usage!)), 0);
    if (process.env.LEDGER_DEBUG) for (const [k, os] of byKind) console.error(k, os.reduce((s2, o) => s2 + (o.usage?.credits ?? 0), 0), os.map((o) => o.status).join(','));
    assert.equal(await servers[0]!.store.credits(main.record.id), START - due, `the ledger of ${outcomes.length} requests`);
    for (const id of leavers) {
      const left = (await servers[0]!.store.credits(id))!;
      assert.ok(left < 1000, `a caller who left mid-generation paid nothing (${left})`);
    }
    return outcomes.length;
  } finally {
    await Promise.all(servers.map((s) => s.close()));
    await upstream.close();
  }
}

describe('the ledger: every balance is its start minus the prices of what usage reported', { timeout: 600_000 }, () => {
  it('on the embedded store', async () => {
    assert.ok((await ledger([undefined])) >= 200);
  });

  const REDIS_URL = process.env.REDIS_URL;
  it('on three instances sharing Redis', { skip: REDIS_URL ? false : 'REDIS_URL is not set; run: scripts/with-redis.sh 6406 node --import tsx --test src/chat/ledger.test.ts' }, async () => {
    const keyPrefix = `ledger${Date.now()}:`; // one for the three: they share the keys
    const stores = [0, 1, 2].map(() => createRedisStore({ url: REDIS_URL!, keyPrefix, log: { warn: () => {} } }));
    try {
      for (const store of stores) {
        // A new client refuses commands until it has connected (no offline queue).
        for (let ok = false; !ok;) ok = await store.ping().then(() => true, () => new Promise((r) => setTimeout(() => r(false), 50)));
      }
      assert.ok((await ledger(stores)) >= 200);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
