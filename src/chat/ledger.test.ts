import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import sharp from 'sharp';
import type { Engine, GenerationEvent } from '../engines/engine.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { createUpstreamEngine } from '../engines/upstream-engine.ts';
import { withVerifiedOutput } from '../engines/verified-output.ts';
import { invalidRequest } from '../errors/service-error.ts';
import { Metrics } from '../http/metrics.ts';
import { Guard } from '../guard/guard.ts';
import { scriptedTextScorer } from '../guard/scripted-text-scorer.ts';
import { createRedisStore } from '../store/redis-store.ts';
import type { Store } from '../store/store.ts';
import type { Embedder } from './semantic/embedder.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import type { PrecontextEntry, Task, TaskInput, TaskName } from '../tasks/task.ts';
import { delta, startFakeUpstream } from '../testing/fake-upstream.ts';
import { dataUrl, speech, spokenVideo, textPdf } from '../testing/fixtures.ts';
import { openDocumentText, presentation, richTextDocument, spreadsheet, wordDocument } from '../testing/office-fixtures.ts';
import { startTestServer, type TestServer } from '../testing/test-server.ts';

// Issue 22, the ledger: a few hundred mixed requests — chat, streamed, every task, MoA on each
// kind of attachment (image, text file, audio, video, PDF, office documents), guard blocks on
// input and mid-stream, cache hits, tool calls, JSON that fails its check, a prompt too long,
// upstream faults (a 500, a reset mid-answer and mid-stream, an answer without usage, a slow
// stream its client leaves), clients that leave at each stage — on the embedded store and on
// three instances sharing Redis (scripts/with-redis.sh 6402 node --import tsx --test src/chat/ledger.test.ts).
// At the end each balance is its start minus the prices of what `usage` reported and the charges
// of the requests that got no usage (a client gone, a failure), as the service records them
// (the `service_credits_charged` metric), to the credit; no request that did work was free.
// Before issue 22 every task answered usage 0 and paid nothing.

/** Prices the test computes by itself: 1 credit a prompt token, 2 a completion token, and per unit. */
const UNIT_PRICES: Record<string, number> = { ocr_pages: 3, detected_images: 2, audio_seconds: 0.5, searches: 5, pages_fetched: 4, translated_kchars: 1 };
const prices = { prompt: 1000, completion: 2000, units: UNIT_PRICES };
interface WireUsage { prompt_tokens: number; completion_tokens: number; task_units?: Record<string, number>; credits?: number }
const priceOf = (u: WireUsage) => Math.max(0, Math.ceil(u.prompt_tokens + 2 * u.completion_tokens
  + Object.entries(u.task_units ?? {}).reduce((sum, [unit, n]) => sum + n * UNIT_PRICES[unit]!, 0) - 1e-9));

const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: 'white' } }).png().toBuffer();
const image = { type: 'image_url', image_url: { url: dataUrl('image/png', png) } };
const file = (filename: string, mime: string, bytes: Buffer) => ({ type: 'file', file: { filename, file_data: dataUrl(mime, bytes) } });
const textFile = file('notes.txt', 'text/plain', Buffer.from('alpha beta gamma delta\n'.repeat(20)));
const OOXML = 'application/vnd.openxmlformats-officedocument';
/** Each kind of attachment the service reads, made once, and the task units its MoA work must report. */
const moaFiles: [string, object, string[]][] = [
  ['audio', file('voice.wav', 'audio/wav', speech('one two three', 'wav')), ['audio_seconds']],
  ['video', file('clip.mp4', 'video/mp4', await spokenVideo('hello there', ['SLIDE'], 'mp4')), ['ocr_pages', 'detected_images', 'audio_seconds']],
  ['pdf', file('page.pdf', 'application/pdf', await textPdf(['a page of text'])), ['ocr_pages']],
  ['docx', file('a.docx', `${OOXML}.wordprocessingml.document`, await wordDocument({ heading: 'Title', paragraphs: ['some text'] })), ['ocr_pages']],
  ['xlsx', file('a.xlsx', `${OOXML}.spreadsheetml.sheet`, await spreadsheet([{ name: 'S', rows: [['a', 1]] }])), ['ocr_pages']],
  ['pptx', file('a.pptx', `${OOXML}.presentationml.presentation`, await presentation([{ title: 'Slide' }])), ['ocr_pages']],
  ['odt', file('a.odt', 'application/vnd.oasis.opendocument.text', openDocumentText(['some text'])), ['ocr_pages']],
  ['rtf', file('a.rtf', 'application/rtf', richTextDocument('some text')), ['ocr_pages']],
];

/**
 * Task doubles that report what a real one would from the attachments they are given (decoded by
 * the service as usual): a page per image or frame (2 for a PDF, 1 and the text for a document),
 * an image looked at per image, seconds per audio, a search, a fetch, characters.
 */
const page = (i: number) => ({ source: 'messages[1].content[1]', page: i + 1, method: 'ocr' as const, width: 8, height: 8, text: 'read', confidence: 0.9, lines: [] });
const detected = { source: 'messages[1].content[1]', width: 8, height: 8 };
const readable = (input: TaskInput, kinds: string[]) => input.attachments.filter((a) => kinds.includes(a.kind));
const doubles: Record<TaskName, (input: TaskInput) => PrecontextEntry> = {
  ocr: (input) => {
    const pages = readable(input, ['image', 'pdf', 'document']).reduce((n, a) => n + (a.kind === 'pdf' ? 2 : 1), 0) + (input.text.length % 3);
    return { name: 'ocr', result: { text: 'read from the page', pages: Array.from({ length: pages }, (_, i) => page(i)) } };
  },
  object_detection: (input) => ({ name: 'object_detection', result: { images: readable(input, ['image']).map(() => ({ ...detected, objects: [] })) } }),
  gui_detection: (input) => ({ name: 'gui_detection', result: { images: readable(input, ['image']).map(() => ({ ...detected, elements: [] })) } }),
  speech_to_text: (input) => ({ name: 'stt', result: { text: 'spoken', language: 'en', duration_seconds: 3.2 * readable(input, ['audio']).length + input.text.length, segments: [] } }),
  translate: ({ text }) => ({ name: 'translate', result: { source_language: 'en', target_language: 'es', text, translated_text: text, engine: 'double' } }),
  web_search: ({ text }) => ({ name: 'web_search', result: { query: text, provider: 'double', results: [] } }),
  scraper: ({ onTokens }) => {
    onTokens?.({ promptTokens: 40, completionTokens: 9 }); // its extraction by the model
    return { name: 'scraper', result: { url: 'https://example.com/', title: 't', text: 'x', links: [], tables: [], metadata: {}, extracted: {} } };
  },
};

/**
 * Where a request that its client will leave has begun its work (generation or task), by the
 * marker its text starts with: the test leaves then, never after a guessed delay.
 */
const began = new Map<string, () => void>();
const marker = (text: string) => /leave-\d+-\d+/.exec(text)?.[0];
const beginning = (text: string) => {
  const at = marker(text);
  if (at) began.get(at)?.();
  return at !== undefined;
};
const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));

const tasks = () => new TaskRegistry((Object.keys(doubles) as TaskName[]).map((name): Task => ({
  name,
  run: async (input) => {
    if (name === 'web_search' && marker(input.text)) {
      // Like the real one: the search is sent (and billed by the provider), then given up when the caller leaves.
      input.onCommitted?.({ searches: 1 });
      beginning(input.text);
      await aborted(input.signal);
      throw new DOMException('The operation was aborted.', 'AbortError');
    }
    // Like the OCR, STT and detection tasks, it finishes the work it began after its caller left.
    if (beginning(input.text)) await aborted(input.signal);
    return doubles[name](input);
  },
})));

/** The semantic layer's encoder: every text at one point. */
const onePoint: Embedder = { embed: async () => ({ vector: new Float32Array([1, 0]), pieces: new Float32Array([1, 0]) }) };

/** "KILL" is S1; anything else is safe. */
const scorer = scriptedTextScorer((text) => (text.includes('KILL') ? { S1: 0.97 } : {}));

const words = (text: string): GenerationEvent[] => text.split(/(?<= )/).map((t) => ({ type: 'content', text: t }));
const lastUser = (messages: { role: string; content: string }[]) => messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';

/**
 * A generation its client leaves: some words, then (once the client has left, as the test waits
 * for it to begin) it stops, as a real engine does on the request's signal.
 */
async function* leaving(request: Parameters<Engine['generate']>[0]): AsyncGenerator<GenerationEvent> {
  for (const event of words('words said before the client left ')) {
    if (request.signal.aborted) return; // it left during the MoA tasks: nothing is generated
    yield event;
  }
  beginning(lastUser(request.messages));
  await aborted(request.signal);
}

/** The engine double: what the request's first word asks for, from the model or the fake upstream. */
function engineFor(upstreamUrl: string): Engine {
  const upstream = createUpstreamEngine({ baseUrl: upstreamUrl, model: 'm', timeoutMs: 60_000 });
  const scripted = createScriptedEngine((request) => {
    const text = lastUser(request.messages);
    if (text.startsWith('toolcall')) {
      return [{ type: 'tool_call', index: 0, id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}' },
        { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 11, completionTokens: 6 } }];
    }
    if (text.startsWith('unsafe')) return [...words('A calm start. Then KILL them. More text. '), { type: 'done', finishReason: 'stop', usage: { promptTokens: 7, completionTokens: 8 } }];
    if (text.startsWith('paraphrase')) return [...words('Paris, of course. '), { type: 'done', finishReason: 'stop', usage: { promptTokens: 6, completionTokens: 3 } }];
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
      if (marker(text)) return leaving(request);
      return withVerifiedOutput(scripted).generate(request);
    },
  };
}

interface Outcome { status: number; usage?: WireUsage; cached?: boolean; didWork: boolean; kind: string }

/** The credits the service recorded as charged, by how each request ended (`service_credits_charged`). */
async function charged(metrics: Metrics[]) {
  const sums: Record<string, { sum: number; count: number; free: number }> = {};
  for (const m of metrics) {
    const values = (await m.registry.getSingleMetric('service_credits_charged')?.get())?.values ?? [];
    for (const v of values as { metricName?: string; labels: Record<string, string | number>; value: number }[]) {
      const ended = String(v.labels.ended);
      const into = (sums[ended] ??= { sum: 0, count: 0, free: 0 });
      if (v.metricName === 'service_credits_charged_sum') into.sum += v.value;
      if (v.metricName === 'service_credits_charged_count') into.count += v.value;
      if (v.metricName === 'service_credits_charged_bucket' && v.labels.le === 0) into.free += v.value;
    }
  }
  return sums;
}

/** Requests not yet wholly ended (answered and settled), over the instances. */
async function open(metrics: Metrics[]) {
  let n = 0;
  for (const m of metrics) n += (await m.registry.getSingleMetric('service_requests_open')!.get()).values.reduce((s, v) => s + v.value, 0);
  return n;
}

/**
 * With `semantic`, the semantic layer runs behind the exact cache, its encoder putting every text
 * at one point (so any two deterministic questions that pass the candidate filter are alike), at a
 * loose bound: the paraphrase kinds below are then answered from their neighbours, each such hit
 * dropping the answer it had started beside its lookup.
 */
async function ledger(stores: (Store | undefined)[], semantic = false) {
  const upstream = await startFakeUpstream((body, res, req) => {
    const text = lastUser(body.messages as never);
    const streamed = body.stream === true;
    if (text.includes('500')) res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":{"message":"boom","type":"server_error"}}');
    else if (text.includes('cut')) (res.writeHead(200, { 'Content-Type': 'application/json' }), res.write('{"choices":['), res.destroy());
    else if (text.includes('reset') || text.includes('slow')) {
      // Words streamed, then the connection dropped once they are sent (an upstream crash), or held until the client leaves.
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      const chunks = ['four ', 'words ', 'came ', 'first '].map((w) => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', ...delta({ content: w }) })}\n\n`);
      if (text.includes('reset')) res.write(chunks.join(''), () => res.destroy());
      else {
        res.write(chunks.join(''));
        req.socket.once('close', () => res.destroy());
        beginning(text);
      }
    } else if (text.includes('nousage')) {
      const content = 'an answer of six words here';
      if (streamed) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        for (const chunk of [delta({ role: 'assistant', content }), delta({}, 'stop')]) res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', ...chunk })}\n\n`);
        res.end('data: [DONE]\n\n');
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
          id: 'x', object: 'chat.completion', created: 1, model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        }));
      }
    } else res.writeHead(200, { 'Content-Type': 'application/json' }).end('not json');
  });
  const servers: TestServer[] = [];
  const metrics: Metrics[] = [];
  for (const store of stores) {
    const m = new Metrics({ warn: () => {}, error: () => {}, info: () => {} } as never);
    metrics.push(m);
    servers.push(await startTestServer({
      engine: engineFor(upstream.baseUrl), tasks: tasks(), guard: new Guard(scorer), metrics: m,
      quota: { prices, defaults: { rpm: null, tpm: null } }, ...(store ? { store } : {}),
      ...(semantic ? { semantic: { embedder: onePoint, options: { scope: 'key' as const, ttlSeconds: 600, maxError: 0.4, verifyShare: 0.1 } } } : {}),
    }));
  }
  const START = 1_000_000;
  const main = await servers[0]!.keys.create('ledger', { credits: START });
  let turn = 0;
  const post = (body: object, key = main.key, signal?: AbortSignal, headers: Record<string, string> = {}) => fetch(`${servers[turn++ % servers.length]!.baseUrl}/chat/completions`, {
    method: 'POST', body: JSON.stringify(body), signal,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
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
    const cached = res.headers.get('x-service-cache') === 'hit'; // chunks carry no vcache
    return { status: 200, usage: last.usage, cached, didWork: didWork && !cached, kind };
  };
  const bypass = { 'x-service-bypass-cache': 'true' };
  const stream = { stream: true, stream_options: { include_usage: true } };
  let leavers = 0;
  /**
   * A request its client leaves once its work has begun: before the first byte of a whole answer,
   * mid-stream, just before the end of a stream (every word came, not the end), during a task.
   */
  const leave = (kind: string, body: (at: string) => object, when: 'begun' | 'first chunk' | 'last word') => async (i: number): Promise<Outcome> => {
    const at = `leave-${leavers++}-${i}`;
    const begun = new Promise<void>((resolve) => began.set(at, resolve));
    const client = new AbortController();
    const pending = post(body(at), main.key, client.signal, bypass);
    if (when === 'begun') {
      await begun; // no byte has come: the answer is not made yet
      client.abort();
      await pending.then((res) => res.arrayBuffer()).catch(() => {});
    } else {
      const res = await pending;
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      for (let seen = ''; ;) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`${kind}: the stream ended before the client left`);
        seen += decoder.decode(value);
        if (when === 'first chunk' ? seen.includes('"content"') : seen.includes('left ')) break;
      }
      client.abort();
      await reader.cancel().catch(() => {});
    }
    began.delete(at);
    return { status: 0, didWork: true, kind };
  };
  const kinds: [string, (i: number) => Promise<Outcome>][] = [
    ['chat', async (i) => read(await post(user(`plain question number ${i} here`)), 'chat', true)],
    ['streamed', async (i) => read(await post(user(`streamed question ${i} a b`, undefined, stream)), 'streamed', true, true)],
    ['cached', async (i) => read(await post(user(`the same question ${i % 3}`)), 'cached', true)],
    ...(Object.keys(doubles) as TaskName[]).map((name): [string, (i: number) => Promise<Outcome>] =>
      [name, async (i) => read(await post(user(name === 'speech_to_text' ? [{ type: 'text', text: `item ${i}` }, moaFiles[0]![1]]
        : name === 'ocr' || name.endsWith('detection') ? [{ type: 'text', text: `item ${i}` }, image] : `item ${i} https://example.com/`,
      `<task>${name}</task>`, { response_format: { type: 'json_object' } })), name, true)]),
    ['moa image', async (i) => read(await post(user([{ type: 'text', text: `what is in it ${i}` }, image])), 'moa image', true)],
    ['moa text file', async (i) => read(await post(user([{ type: 'text', text: `summarise ${i}` }, textFile], undefined, { max_tokens: 5 })), 'moa text file', true)],
    ...moaFiles.map(([name, part]): [string, (i: number) => Promise<Outcome>] =>
      [`moa ${name}`, async (i) => read(await post(user([{ type: 'text', text: `what does it hold ${i}` }, part], undefined, i % 2 ? stream : {})), `moa ${name}`, true, i % 2 === 1)]),
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
    ['upstream reset stream', async (i) => read(await post(user(`upstream reset ${i}`, undefined, stream)), 'upstream reset stream', true, true)],
    ['upstream nousage', async (i) => read(await post(user(`upstream nousage ${i}`), main.key, undefined, bypass), 'upstream nousage', true)],
    ['upstream nousage stream', async (i) => read(await post(user(`upstream nousage ${i}`, undefined, stream), main.key, undefined, bypass), 'upstream nousage stream', true, true)],
    ['leave before the first byte', leave('leave before the first byte', (at) => user(`${at} go on`), 'begun')],
    ['leave mid-stream', leave('leave mid-stream', (at) => user(`${at} go on`, undefined, stream), 'first chunk')],
    ['leave before the end', leave('leave before the end', (at) => user(`${at} go on`, undefined, stream), 'last word')],
    ['leave during a task', leave('leave during a task', (at) => user([{ type: 'text', text: `${at} read it` }, image], '<task>ocr</task>'), 'begun')],
    ['leave during a search', leave('leave during a search', (at) => user(`${at} the weather`, '<task>web_search</task>'), 'begun')],
    ['leave during moa', leave('leave during moa', (at) => user([{ type: 'text', text: `${at} read it` }, image], undefined, stream), 'begun')],
    ['leave slow upstream', leave('leave slow upstream', (at) => user(`upstream slow ${at}`, undefined, stream), 'first chunk')],
  ];
  if (semantic) {
    // One question in many phrasings with the same content words (so the filter lets them meet),
    // deterministic, answered alike, streamed or not, guarded or not.
    // Ten, none asked twice in a kind: every hit is a semantic one.
    const phrasings = ['paraphrase the capital of france', 'paraphrase capital of france', 'paraphrase france, its capital', 'paraphrase what is the capital of france',
      'paraphrase so, the capital of france?', 'paraphrase and the capital of france', 'paraphrase the capital of france, please', 'paraphrase capital of france?',
      'paraphrase france: its capital', 'paraphrase the capital of france is'];
        kinds.push(
      ['paraphrase', async (i) => read(await post(user(phrasings[i % 10]!, undefined, { temperature: 0 })), 'paraphrase', true)],
      ['paraphrase streamed', async (i) => read(await post(user(phrasings[(i + 2) % 10]!, undefined, { temperature: 0, ...stream })), 'paraphrase streamed', true, true)],
      ['paraphrase guarded', async (i) => read(await post(user(phrasings[(i + 1) % 10]!, '<guard>S1</guard>', { temperature: 0 })), 'paraphrase guarded', true)],
    );
  }
  const FAILED_WITHOUT_WORK = ['too long', 'upstream 500', 'upstream cut'];
  try {
    // About 400 requests, 12 at a time, every kind in turn.
    const outcomes: Outcome[] = [];
    const ROUNDS = 10;
    const jobs = Array.from({ length: ROUNDS * kinds.length }, (_, n) => () => kinds[n % kinds.length]![1](Math.floor(n / kinds.length)));
    const queue = [...jobs];
    await Promise.all(Array.from({ length: 12 }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) {
        outcomes.push(await job());
        if (process.env.LEDGER_DEBUG) console.error('done', outcomes.length, outcomes.at(-1)!.kind);
      }
    }));
    // Every request has wholly ended (its charge settled), those whose clients left too.
    while ((await open(metrics)) > 0) await new Promise((r) => setTimeout(r, 20));

    const byKind = new Map<string, Outcome[]>();
    for (const o of outcomes) byKind.set(o.kind, [...(byKind.get(o.kind) ?? []), o]);
    const summary = Object.fromEntries([...byKind].map(([k, os]) => [k, os.map((o) => o.status).join(',')]));
    // Every kind answered as it should (the faults and the refusals are not 200; a client gone saw none).
    for (const [kind, os] of byKind) {
      const expected = kind.startsWith('leave') ? 0 : kind === 'too long' ? 400 : kind.startsWith('upstream') && !kind.includes('nousage') ? 502 : 200;
      assert.ok(os.every((o) => o.status === expected || (expected === 502 && o.status >= 500)), `${kind}: ${JSON.stringify(summary[kind])}`);
    }
    const answered = outcomes.filter((o) => o.usage);
    for (const o of answered) {
      assert.equal(o.usage!.credits, o.cached ? 0 : priceOf(o.usage!), `${o.kind}: usage.credits is the price of its usage (${JSON.stringify(o.usage)})`);
      if (o.didWork) assert.ok(o.usage!.credits! > 0, `${o.kind} did work and was free: ${JSON.stringify(o.usage)}`);
    }
    // MoA on each kind of attachment reports (and so pays) the work of the tasks that read it.
    for (const [name, , units] of moaFiles) {
      for (const o of byKind.get(`moa ${name}`)!.filter((x) => !x.cached)) {
        assert.deepEqual(units.filter((u) => !(o.usage!.task_units?.[u]! > 0)), [], `moa ${name}: its work is in usage (${JSON.stringify(o.usage)})`);
      }
    }
    assert.ok(answered.some((o) => o.cached), 'some answers came from the cache');
    if (semantic) for (const kind of ['paraphrase', 'paraphrase streamed', 'paraphrase guarded']) assert.ok(byKind.get(kind)!.some((o) => o.cached), `no ${kind} was a semantic hit`);
    const due = answered.reduce((sum, o) => sum + (o.cached ? 0 : priceOf(o.usage!)), 0);

    // The requests that got no usage: what the service recorded it charged them.
    const recorded = await charged(metrics);
    const left = recorded.client_left ?? { sum: 0, count: 0, free: 0 };
    const failed = recorded.failed ?? { sum: 0, count: 0, free: 0 };
    const gone = outcomes.filter((o) => o.kind.startsWith('leave')).length;
    const failures = outcomes.filter((o) => !o.usage && !o.kind.startsWith('leave'));
    if (process.env.LEDGER_DEBUG) for (const [k, os] of byKind) console.error(k, os.reduce((s2, o) => s2 + (o.usage?.credits ?? 0), 0), os.map((o) => o.status).join(','));
    if (process.env.LEDGER_DEBUG) console.error(recorded);
    assert.equal(left.count, gone, 'every client that left has its charge recorded');
    assert.equal(left.free, 0, 'no client that left after its work began was free');
    assert.equal(failed.count, failures.length, 'every failure has its charge recorded');
    assert.equal(failed.free, failures.filter((o) => FAILED_WITHOUT_WORK.includes(o.kind)).length, 'a failure that did work was not free');
    assert.equal(recorded.answered?.sum, due, 'the answers were charged what their usage says');
    assert.equal(await servers[0]!.store.credits(main.record.id), START - due - left.sum - failed.sum, `the ledger of ${outcomes.length} requests`);

    // Output that fails its check twice: 500 output_validation_failed, two passes of 5 + 3 tokens, paid.
    const checked = await servers[0]!.keys.create('failed checks', { credits: 1000 });
    for (let i = 0; i < 4; i++) {
      const res = await post(user(`badjson ${i}`, undefined, { response_format: { type: 'json_object' } }), checked.key);
      assert.equal(res.status, 500);
      await res.arrayBuffer();
    }
    assert.equal(await servers[0]!.store.credits(checked.record.id), 1000 - 4 * 2 * (5 + 2 * 3), 'four answers that failed their check, two passes each');
    return outcomes.length;
  } finally {
    await Promise.all(servers.map((s) => s.close()));
    await upstream.close();
  }
}

describe('the ledger: every balance is its start minus the prices of what usage reported', { timeout: 600_000 }, () => {
  it('on the embedded store', async () => {
    assert.ok((await ledger([undefined])) >= 300);
  });

  it('on the embedded store, with the semantic layer', async () => {
    assert.ok((await ledger([undefined], true)) >= 300);
  });

  const REDIS_URL = process.env.REDIS_URL;
  it('on three instances sharing Redis', { skip: REDIS_URL ? false : 'REDIS_URL is not set; run: scripts/with-redis.sh 6402 node --import tsx --test src/chat/ledger.test.ts' }, async () => {
    const keyPrefix = `ledger${Date.now()}:`; // one for the three: they share the keys
    const stores = [0, 1, 2].map(() => createRedisStore({ url: REDIS_URL!, keyPrefix, log: { warn: () => {} } }));
    try {
      for (const store of stores) {
        // A new client refuses commands until it has connected (no offline queue).
        for (let ok = false; !ok;) ok = await store.ping().then(() => true, () => new Promise((r) => setTimeout(() => r(false), 50)));
      }
      assert.ok((await ledger(stores)) >= 300);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
