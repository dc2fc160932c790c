import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import type { GenerationEvent } from '../engines/engine.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { withVerifiedOutput } from '../engines/verified-output.ts';
import { invalidRequest } from '../errors/service-error.ts';
import { Guard } from '../guard/guard.ts';
import { scriptedTextScorer } from '../guard/scripted-text-scorer.ts';
import { Metrics } from '../http/metrics.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import { createSearxngProvider } from '../tasks/web-search/search-provider.ts';
import { createWebSearchTask } from '../tasks/web-search/web-search-task.ts';
import type { Apertium } from '../tasks/translate/apertium.ts';
import { createTranslateTask } from '../tasks/translate/translate-task.ts';
import { startFakeUpstream } from '../testing/fake-upstream.ts';
import type { Task } from '../tasks/task.ts';
import { dataUrl } from '../testing/fixtures.ts';
import { hello, postCompletion, startTestServer, type TestServer } from '../testing/test-server.ts';

// Issue 22: every unit of work is paid for, and `usage` says what was done.

/** One credit per prompt token and per completion token; 10 per OCR page, 7 per detected image. */
const prices = { prompt: 1000, completion: 1000, units: { ocr_pages: 10, detected_images: 7 } };
const quota = { prices, defaults: { rpm: null, tpm: null } };
const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'white' } }).png().toBuffer();

/** An OCR double that "reads" `pages` pages from whatever it is given. */
const fakeOcr = (pages: number, text = 'words read from the page'): Task => ({
  name: 'ocr',
  async run() {
    return {
      name: 'ocr',
      result: {
        text,
        pages: Array.from({ length: pages }, (_, i) => ({
          source: 'messages[0].content[1]', page: i + 1, method: 'ocr' as const, width: 8, height: 8, text, confidence: 0.9, lines: [],
        })),
      },
    };
  },
});

const withImage = (text: string, extra: object = {}, system?: string) => ({
  ...hello, ...extra,
  messages: [
    ...(system ? [{ role: 'system', content: system }] : []),
    { role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: dataUrl('image/png', png) } }] },
  ],
});

interface WireUsage { prompt_tokens: number; completion_tokens: number; task_units?: Record<string, number>; credits?: number }

describe('task work is billed', () => {
  it('charges task mode per unit of work and reports it in usage (task_units, credits)', async () => {
    const server = await startTestServer({ quota, tasks: new TaskRegistry([fakeOcr(3)]) });
    try {
      const { key, record } = await server.keys.create('ocr', { credits: 1000 });
      const res = await postCompletion(server.baseUrl, withImage('read it', {}, '<task>ocr</task>'), { Authorization: `Bearer ${key}` });
      assert.equal(res.status, 200);
      const { usage } = (await res.json()) as { usage: WireUsage };
      assert.deepEqual(usage.task_units, { ocr_pages: 3 });
      assert.equal(usage.credits, 30);
      assert.equal(await server.store.credits(record.id), 970, 'three pages read at 10 credits each');
    } finally {
      await server.close();
    }
  });

  it('charges the MoA work on attachments like the task, and the prompt with the MoA text, uncapped by the reservation', async () => {
    const long = Array.from({ length: 300 }, (_, i) => `word${i}`).join(' ');
    const server = await startTestServer({ quota, tasks: new TaskRegistry([fakeOcr(2, long)]) });
    try {
      const { key, record } = await server.keys.create('moa', { credits: 5000 });
      const res = await postCompletion(server.baseUrl, withImage('what does it say', { max_tokens: 1 }), { Authorization: `Bearer ${key}` });
      assert.equal(res.status, 200);
      const { usage } = (await res.json()) as { usage: WireUsage };
      assert.ok(usage.prompt_tokens > 300, `the MoA text is in the prompt (${usage.prompt_tokens})`);
      assert.deepEqual(usage.task_units, { ocr_pages: 2 });
      const due = usage.prompt_tokens + usage.completion_tokens + 20;
      assert.equal(usage.credits, due);
      assert.equal(await server.store.credits(record.id), 5000 - due);
    } finally {
      await server.close();
    }
  });

  it('refuses before any work a task the balance cannot cover', async () => {
    let ran = 0;
    const ocr = fakeOcr(1);
    const counted: Task = { name: 'ocr', run: (input) => (ran++, ocr.run(input)) };
    const server = await startTestServer({ quota, tasks: new TaskRegistry([counted]) });
    try {
      const { key, record } = await server.keys.create('poor', { credits: 5 });
      const res = await postCompletion(server.baseUrl, withImage('read it', {}, '<task>ocr</task>'), { Authorization: `Bearer ${key}` });
      assert.equal(res.status, 402);
      assert.equal(ran, 0);
      assert.equal(await server.store.credits(record.id), 5);
    } finally {
      await server.close();
    }
  });
});

describe('what was generated is paid, and only that', () => {
  it('charges nothing for a request refused 400 context_length_exceeded before any token', async () => {
    const engine = createScriptedEngine(() => {
      throw invalidRequest('too long for the context', 'context_length_exceeded', 'messages');
    });
    const server = await startTestServer({ quota, engine });
    try {
      const { key, record } = await server.keys.create('refused', { credits: 1000 });
      const res = await postCompletion(server.baseUrl, { ...hello, max_tokens: 5 }, { Authorization: `Bearer ${key}` });
      assert.equal(res.status, 400);
      assert.equal(await server.store.credits(record.id), 1000);
    } finally {
      await server.close();
    }
  });

  it('charges an answer whose engine reported no usage from a count of its text', async () => {
    const engine = createScriptedEngine(() => [
      ...'one two three four five six'.split(/(?<= )/).map((text): GenerationEvent => ({ type: 'content', text })),
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 0, completionTokens: 0 } },
    ]);
    const server = await startTestServer({ quota, engine });
    try {
      const { key, record } = await server.keys.create('silent', { credits: 1000 });
      const res = await postCompletion(server.baseUrl, { ...hello, max_tokens: 50 }, { Authorization: `Bearer ${key}`, 'x-service-bypass-cache': 'true' });
      const { usage } = (await res.json()) as { usage: WireUsage };
      assert.ok(usage.completion_tokens > 0 && usage.prompt_tokens > 0, JSON.stringify(usage));
      assert.equal(await server.store.credits(record.id), 1000 - usage.prompt_tokens - usage.completion_tokens);
    } finally {
      await server.close();
    }
  });

  it('charges the passes of an answer that failed its output check (output_validation_failed)', async () => {
    // Not JSON, twice: each pass generated 4 tokens from a 3-token prompt.
    const engine = withVerifiedOutput(createScriptedEngine(() => [
      { type: 'content', text: 'not json at all' },
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 4 } },
    ]));
    const server = await startTestServer({ quota, engine });
    try {
      const { key, record } = await server.keys.create('invalid', { credits: 1000 });
      const res = await postCompletion(server.baseUrl, { ...hello, max_tokens: 50, response_format: { type: 'json_object' } }, { Authorization: `Bearer ${key}` });
      const { error } = (await res.json()) as { error: { code: string } };
      assert.deepEqual([res.status, error.code], [500, 'output_validation_failed']);
      assert.equal(await server.store.credits(record.id), 1000 - 2 * (3 + 4), 'two passes generated, both paid');
    } finally {
      await server.close();
    }
  });

  it('charges a stream the output guard stops for what was generated, and says so in its usage', async () => {
    const scorer = scriptedTextScorer((text) => (text.includes('KILL') ? { S1: 0.97 } : {}));
    const engine = createScriptedEngine(() => [
      ...'A calm first sentence. Then KILL them all. And more after it. '.split(/(?<= )/).map((text): GenerationEvent => ({ type: 'content', text })),
      { type: 'done', finishReason: 'stop', usage: { promptTokens: 4, completionTokens: 12 } },
    ]);
    const server = await startTestServer({ quota, engine, guard: new Guard(scorer) });
    try {
      const { key, record } = await server.keys.create('stopped', { credits: 1000 });
      const body = {
        model: 'service', stream: true, stream_options: { include_usage: true }, max_tokens: 50,
        messages: [{ role: 'system', content: '<guard>S1</guard>' }, { role: 'user', content: 'say something' }],
      };
      const res = await postCompletion(server.baseUrl, body, { Authorization: `Bearer ${key}` });
      const text = await res.text();
      const chunks = text.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
      assert.match(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), /A calm first sentence\.[\s\S]*unsafe S1/, text);
      const usage = chunks.at(-1).usage as WireUsage;
      assert.ok(usage.completion_tokens > 0, `what was generated is reported (${JSON.stringify(usage)})`);
      assert.equal(await server.store.credits(record.id), 1000 - usage.prompt_tokens - usage.completion_tokens);
      assert.ok((await server.store.credits(record.id))! < 1000, 'the stopped stream was free');
    } finally {
      await server.close();
    }
  });
});

/**
 * Sends `messages` with `key`, leaves once `begun` resolves (the work is under way), and waits until
 * the request has wholly ended (settled); the test's timeout is the hang detector.
 */
async function leaveOnceBegun(server: TestServer, metrics: Metrics, key: string, messages: object[], begun: Promise<void>) {
  const client = new AbortController();
  const pending = fetch(`${server.baseUrl}/chat/completions`, {
    method: 'POST', signal: client.signal,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'service', messages }),
  });
  await begun;
  client.abort();
  await pending.catch(() => {});
  return async function settled() {
    const open = async () => (await metrics.registry.getSingleMetric('service_requests_open')!.get()).values[0]?.value ?? 0;
    while ((await open()) > 0) await new Promise((r) => setTimeout(r, 20));
  };
}

describe('a client that leaves pays the work sent for it', () => {
  it('charges a web search whose client left while the provider was answering', async () => {
    // A SearXNG double that has received the search (the provider's call is made, and billed
    // upstream) and answers only once the service gives up on it.
    let searched!: () => void;
    const received = new Promise<void>((resolve) => (searched = resolve));
    const searxng = await startFakeUpstream((_body, res, req) => {
      req.socket.once('close', () => res.destroy());
      searched();
    });
    const metrics = new Metrics();
    const server = await startTestServer({
      metrics,
      quota: { prices: { ...prices, units: { searches: 5 } }, defaults: { rpm: null, tpm: null } },
      tasks: new TaskRegistry([createWebSearchTask(createSearxngProvider(searxng.baseUrl, 60_000))]),
    });
    try {
      const { key, record } = await server.keys.create('searcher', { credits: 1000 });
      const settled = await leaveOnceBegun(server, metrics, key, [{ role: 'system', content: '<task>web_search</task>' }, { role: 'user', content: 'the weather' }], received);
      await settled();
      assert.equal(await server.store.credits(record.id), 1000 - 5, 'the search sent to the provider is paid');
    } finally {
      await server.close();
      await searxng.close();
    }
  });
});

describe('a client that leaves pays the translation it started', () => {
  it('charges the characters sent to the translator when the client left before the answer', async () => {
    // A translator double: the text is in its hands (apertium runs it to the end whoever waits),
    // and it answers only after the client has gone.
    let started!: () => void;
    const inHand = new Promise<void>((resolve) => (started = resolve));
    let finish!: (text: string) => void;
    const apertium = {
      route: async () => ({ modes: ['en-es'] }),
      supportedPairs: async () => new Map([['en', 'es']]),
      translate: (text: string) => new Promise<string>((resolve) => { finish = resolve; started(); void text; }),
    } as unknown as Apertium;
    const metrics = new Metrics();
    const server = await startTestServer({
      metrics,
      quota: { prices: { ...prices, units: { translated_kchars: 7 } }, defaults: { rpm: null, tpm: null } },
      tasks: new TaskRegistry([createTranslateTask(apertium, { detect: async () => 'en' })]),
    });
    try {
      const { key, record } = await server.keys.create('translator', { credits: 1000 });
      const settled = await leaveOnceBegun(server, metrics, key, [{ role: 'system', content: '<task>translate</task> to Spanish' }, { role: 'user', content: 'good morning '.repeat(200) }], inHand);
      finish('buenos días');
      await settled();
      // 2,600 characters: 3 started thousands at 7 credits each.
      assert.equal(await server.store.credits(record.id), 1000 - 21, 'the translation under way is paid');
    } finally {
      await server.close();
    }
  });
});

describe('tokens per minute hold for large prompts', () => {
  it('refuses a prompt larger than the key\'s tokens per minute instead of admitting it at the limit', async () => {
    const server = await startTestServer({ quota: { prices, defaults: { rpm: null, tpm: 200 } } });
    try {
      const res = await postCompletion(server.baseUrl, { ...hello, max_tokens: 5, messages: [{ role: 'user', content: 'word '.repeat(1500) }] });
      assert.equal(res.status, 400);
      const { error } = (await res.json()) as { error: { code: string } };
      assert.equal(error.code, 'tokens_over_rate_limit');
      const small = await postCompletion(server.baseUrl, { ...hello, max_tokens: 5 }, { 'x-service-bypass-cache': 'true' });
      assert.equal(small.status, 200);
    } finally {
      await server.close();
    }
  });
});
