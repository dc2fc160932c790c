// Hostile inputs at SERVICE_BASE_URL, replayed through HTTP: files that declare more than they
// hold, inputs that made patterns backtrack, bodies that lie about their framing. Each must get
// the right status and error envelope, and the server must go on answering other callers. The
// files are made here, in memory (src/testing/hostile-inputs.ts). Limits are the defaults.
// Issue 21's cases too: a caller's pattern that backtracks, a scraper page of links and nested
// tables, a caller who leaves while waiting for a slot, two videos that differ only in their first
// slide, and LiteLLM's assistant message (tool_calls, content null) through the openai SDK.
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { dataUrl, spokenVideo } from '../src/testing/fixtures.ts';
import { blankPagesPdf, deflateBombPdf, hugePng, longVideo, manyLinksHtml, nestedTablesHtml, repeatedAttachmentMarker, spacesAfterTag } from '../src/testing/hostile-inputs.ts';
import { liarDocx, zipBombDocx } from '../src/testing/office-fixtures.ts';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
/** Where /metrics is: the service's origin (outside /v1). */
const origin = baseUrl.replace(/\/v1$/, '');
/** SERVICE_CONTEXT_WINDOW names the deployment's context window in tokens, when it is small. */
const window = Number(process.env.SERVICE_CONTEXT_WINDOW ?? Infinity);
const openSchema = { type: 'json_schema', json_schema: { name: 'task', schema: {} } };

interface Answer { status: number; body: any }

/** A raw POST, so headers go out exactly as written (fetch would fix some of them); `signal` lets the caller leave. */
function post(body: Buffer | string, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/chat/completions`, {
      method: 'POST', ...(signal ? { signal } : {}),
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const postJson = (body: unknown, headers: Record<string, string> = {}) => post(JSON.stringify(body), headers);

/** Another caller's ordinary request. */
const goodRequest = () => postJson({ model: 'service', max_tokens: 4, messages: [{ role: 'user', content: 'Say hello.' }] });

async function assertError(answer: Answer, status: number, type: string, code: string, message?: RegExp): Promise<void> {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.deepEqual([answer.body.error?.type, answer.body.error?.code], [type, code]);
  assert.equal(typeof answer.body.error.message, 'string');
  if (message) assert.match(answer.body.error.message, message);
}

/** After a hostile request, the server still answers an ordinary one. */
async function assertStillServing(): Promise<void> {
  const answer = await goodRequest();
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
}

const task = (name: string, part: unknown, extra: object = {}) => ({
  model: 'service', response_format: openSchema, ...extra,
  messages: [{ role: 'system', content: `<task>${name}</task>` }, { role: 'user', content: [{ type: 'text', text: 'Read this.' }, part] }],
});
const image = (bytes: Buffer) => ({ type: 'image_url', image_url: { url: dataUrl('image/png', bytes) } });
const file = (filename: string, mime: string, bytes: Buffer) => ({ type: 'file', file: { filename, file_data: dataUrl(mime, bytes) } });
const pdf = (bytes: Buffer) => file('doc.pdf', 'application/pdf', bytes);

describe(`hostile inputs at ${baseUrl}`, { timeout: 600_000 }, () => {
  for (const [width, height] of [[16_000, 16_000], [8000, 8000]] as const) {
    it(`refuses a small PNG that declares ${width}×${height} pixels with 413, in task mode and through the MoA layer`, async () => {
      const png = await hugePng(width, height);
      assert.ok(png.length < 100_000);
      await assertError(await postJson(task('object_detection', image(png))), 413, 'payload_too_large', 'image_too_large', /IMAGE_MAX_PIXELS/);
      await assertError(await postJson({ model: 'service', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, image(png)] }] }),
        413, 'payload_too_large', 'image_too_large');
      await assertStillServing();
    });
  }

  it('refuses a PDF whose streams inflate to 300 MB with 413', async () => {
    const bomb = await deflateBombPdf(300_000_000);
    assert.ok(bomb.length < 2_000_000);
    await assertError(await postJson(task('ocr', pdf(bomb))), 413, 'payload_too_large', 'pdf_too_large', /PDF_MAX_INFLATED_BYTES/);
    await assertStillServing();
  });

  it('refuses a 2-hour video with 413 video_too_long, in task mode and through the MoA layer', async () => {
    const video = file('film.mp4', 'video/mp4', longVideo(7200));
    await assertError(await postJson(task('speech_to_text', video)), 413, 'payload_too_large', 'video_too_long', /VIDEO_MAX_SECONDS/);
    await assertError(await postJson({ model: 'service', messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise.' }, video] }] }),
      413, 'payload_too_large', 'video_too_long');
    await assertStillServing();
  });

  it('refuses a zip bomb disguised as a docx (1 GiB from 1 MB) with 413, and a docx whose sizes lie', async () => {
    const docx = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
    const bomb = zipBombDocx(1024 * 1024 * 1024);
    assert.ok(bomb.length < 2_000_000);
    await assertError(await postJson(task('ocr', file('report.docx', docx, bomb))), 413, 'payload_too_large', 'document_too_large', /DOCUMENT_MAX_INFLATED_BYTES/);
    await assertError(await postJson(task('ocr', file('report.docx', docx, liarDocx(512 * 1024 * 1024)))), 413, 'payload_too_large', 'document_too_large');
    await assertStillServing();
  });

  it('reads 20 of 60 blank pages, says so in the precontext, and serves another caller meanwhile', async () => {
    const pending = postJson(task('ocr', pdf(await blankPagesPdf(60))));
    let hostileDone = false;
    void pending.then(() => (hostileDone = true));
    // The service's own turn while the pages are read: a request that needs no model. A model's
    // answer is no measure of that: on 2 cores its threads can stall behind the OCR's (in CI a
    // chained instance's upstream took 6.3 s for 4 tokens, as long as the 20 pages).
    const listed = await fetch(`${baseUrl}/models`, { headers: { Authorization: `Bearer ${apiKey}` } });
    assert.equal(listed.status, 200);
    assert.equal(hostileDone, false, 'the service answered nothing else until the 60-page PDF was read');
    const other = await goodRequest();
    assert.equal(other.status, 200, JSON.stringify(other.body));
    const answer = await pending;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const entry = answer.body.precontext[0];
    assert.deepEqual(entry.result.documents, [{ source: 'messages[1].content[1]', format: 'pdf', page_count: 60, pages_read: 20 }]);
    assert.equal(entry.result.pages.length, 20);
  });

  for (const [name, system] of [
    ['1.2 KB of spaces after <task>', spacesAfterTag('task', 1200)],
    ['1.2 KB of tabs after <guard>', spacesAfterTag('guard', 1200, '\t')],
    ['100 KB of spaces after <task>', spacesAfterTag('task', 100_000)],
  ]) {
    it(`answers a system message of ${name} as ordinary chat`, async () => {
      const answer = await postJson({ model: 'service', max_tokens: 4, messages: [{ role: 'system', content: system }, { role: 'user', content: 'Hi' }] });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      await assertStillServing();
    });
  }

  // 320 KB of text is about 80,000 tokens: a small window refuses it at once, a large one answers.
  it('answers 20,000 unclosed "[file attached: " markers after a text file as ordinary chat', async () => {
    const answer = await postJson({
      model: 'service', max_tokens: 4,
      messages: [{ role: 'user', content: [
        { type: 'file', file: { filename: 'note.txt', file_data: dataUrl('text/plain', Buffer.from('hello')) } },
        { type: 'text', text: repeatedAttachmentMarker(20_000) },
      ] }],
    });
    if (window < 100_000) await assertError(answer, 400, 'invalid_request_error', 'context_length_exceeded');
    else assert.equal(answer.status, 200, JSON.stringify(answer.body));
    await assertStillServing();
  });

  it('answers a body declared gzip that is not gzip with 400, and a UTF-7 body with 415', async () => {
    const hello = JSON.stringify({ model: 'service', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] });
    await assertError(await post(hello, { 'Content-Encoding': 'gzip' }), 400, 'invalid_request_error', 'invalid_body');
    await assertError(await post(hello, { 'Content-Type': 'application/json; charset=utf-7' }), 415, 'invalid_request_error', 'unsupported_charset');
    await assertStillServing();
  });

  it('refuses to fetch addresses that reach this machine, in every spelling tried', async () => {
    for (const host of ['[::127.0.0.1]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[64:ff9b::a9fe:a9fe]', '[2002:7f00:1::]', '2130706433', '0x7f.1', '0177.0.0.1', '0', '169.254.169.254']) {
      const answer = await postJson(task('ocr', { type: 'image_url', image_url: { url: `http://${host}/x.png` } }));
      await assertError(answer, 400, 'invalid_request_error', 'url_not_allowed');
    }
    await assertStillServing();
  });

  // Issue 21, finding 7: a pattern that backtracks for hours in a native RegExp. The service may
  // refuse it or check answers against it; either way it answers, and another caller is answered
  // while it runs (a stalled event loop would hold both until the hang detector).
  it('answers a schema whose pattern is ^(a|a)*$ (400 or checked), and another caller meanwhile', async () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } }, patternProperties: { '^(b|b)*$': { type: 'string' } }, required: ['s'] };
    // A model asked to repeat it writes the string the pattern backtracks on (forty "a" and a "!").
    const asked = [{ role: 'system', content: 'Repeat the user message exactly.' }, { role: 'user', content: JSON.stringify({ s: `${'a'.repeat(40)}!` }) }];
    const ask = { model: 'service', temperature: 0, max_tokens: 60, messages: asked };
    const [json, tool, other] = await Promise.all([
      postJson({ ...ask, response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } }, { 'x-service-bypass-cache': 'true' }),
      postJson({ ...ask, tools: [{ type: 'function', function: { name: 'f', parameters: schema } }], tool_choice: 'required' }, { 'x-service-bypass-cache': 'true' }),
      goodRequest(),
    ]);
    assert.equal(other.status, 200, JSON.stringify(other.body));
    for (const answer of [json, tool]) {
      if (answer.status === 400) await assertError(answer, 400, 'invalid_request_error', 'invalid_json_schema');
      // 500: the answer did not conform, here or (a chained instance) at the upstream, which says so.
      else if (answer.status === 500) await assertError(answer, 500, 'internal_error', answer.body.error?.code === 'upstream_error' ? 'upstream_error' : 'output_validation_failed');
      else {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        const { message, finish_reason: finish } = answer.body.choices[0];
        if (finish === 'length') continue; // cut at max_tokens: passed on as it is, not whole JSON
        const { s } = JSON.parse(message.tool_calls?.[0]?.function.arguments ?? message.content);
        assert.match(s, /^a*$/, 'an answer that the pattern refuses was passed on');
      }
    }
    await assertStillServing();
  });

  // Issue 21, finding 8. Attached pages (the fetcher refuses this machine, so the suite cannot
  // serve one by URL; 2 million links, 36 MB, do not fit the default 20 MiB body as base64, and
  // src/tasks/scraper/scraper-task.test.ts reads those, and 100,000 nested tables, in-process):
  // 100,000 links and 20,000 tables, each in the one cell of the last, a hundred times and more
  // what the default SCRAPER_MAX_* let back, and sizes that keep this case to seconds (the parse
  // of a 5 MB page costs the worker about half a minute on a loaded 2-core machine).
  it('scrapes a page of 100,000 links and one of 20,000 nested tables within their bounds, and answers another caller meanwhile', async () => {
    const scrape = (html: Buffer) => postJson(task('scraper', file('page.html', 'text/html', html)));
    const [links, tables, other] = await Promise.all([scrape(manyLinksHtml(100_000)), scrape(nestedTablesHtml(20_000)), goodRequest()]);
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(links.status, 200, JSON.stringify(links.body));
    assert.equal(links.body.precontext[0].result.links.length, 1000);
    assert.equal(tables.status, 200, JSON.stringify(tables.body));
    assert.equal(tables.body.precontext[0].result.tables.length, 100);
    await assertStillServing();
  });

  // Issue 21, finding 3: a caller who left while waiting for a generation slot made a request that
  // never ended. The slots are kept busy by answers that a grammar makes long (one JSON constant of
  // 3000 numbers, cut at max_tokens); requests are added until one waits, then a caller joins the
  // queue and leaves. Its request must end (service_requests_open back where it was) and leave the
  // queue, and once the busy callers leave too, nothing is left open.
  it('ends the request of a caller who leaves while waiting for a slot', async () => {
    const gauges = async () => {
      const text = await (await fetch(`${origin}/metrics`)).text();
      const value = (name: string) => Number(text.split('\n').find((l) => l.startsWith(`${name} `))?.split(' ')[1]);
      return { open: value('service_requests_open'), waiting: value('service_queue_waiting') };
    };
    const until = async (check: (g: { open: number; waiting: number }) => boolean) => {
      while (!check(await gauges())) await new Promise((r) => setTimeout(r, 50));
    };
    const long = { type: 'json_schema', json_schema: { name: 'long', schema: { const: Array.from({ length: 3000 }, (_, i) => i).join(' ') } } };
    const before = (await gauges()).open;
    assert.ok(Number.isFinite(before), 'GET /metrics has no service_requests_open');
    const callers: { leave: AbortController; ended: Promise<unknown> }[] = [];
    const join = (content: string) => {
      const leave = new AbortController();
      const ended = post(JSON.stringify({ model: 'service', max_tokens: 1000, response_format: long, messages: [{ role: 'user', content }] }),
        { 'x-service-bypass-cache': 'true' }, leave.signal).catch((e: unknown) => e);
      callers.push({ leave, ended });
      return leave;
    };
    try {
      // Busy callers until one of them waits (a chained instance has more slots than a local one).
      for (let busy = 1; ; busy++) {
        join(`Count, caller ${busy}.`);
        await until((g) => g.open >= before + busy);
        if ((await gauges()).waiting >= 1) break;
      }
      const { waiting } = await gauges();
      const leaver = join('Count, caller who leaves.');
      await until((g) => g.waiting >= waiting + 1);
      leaver.abort();
      await callers.at(-1)!.ended;
      await until((g) => g.waiting === waiting && g.open === before + callers.length - 1);
    } finally {
      for (const caller of callers) caller.leave.abort();
      await Promise.all(callers.map((c) => c.ended));
    }
    await until((g) => g.open === before && g.waiting === 0);
    await assertStillServing();
  });

  // Issue 21, finding 5: a video became several attachments under one param and the cache key kept
  // the last (the sound track or the last frame), so a video that differs only in its first slide
  // was answered from the other's cache. Per key that serves a wrong answer; with
  // CACHE_SCOPE=global, another tenant's. Random numbers keep one run's videos out of another's cache.
  it('does not answer a video from the cache of another with the same sound and last slide', async () => {
    const nonce = randomInt(1000, 9999);
    const clip = (slides: string[]) => spokenVideo(`The end of show ${nonce}.`, slides, 'mp4');
    const [alpha, bravo] = await Promise.all([clip([`ALPHA ${nonce}`, 'THE END']), clip([`BRAVO ${nonce}`, 'THE END'])]);
    const ocr = async (video: Buffer) => {
      const answer = await postJson(task('ocr', file('clip.mp4', 'video/mp4', video)));
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return { text: answer.body.choices[0].message.content as string, vcache: answer.body.vcache };
    };
    const first = await ocr(alpha);
    assert.match(first.text, /ALPHA/);
    const second = await ocr(bravo);
    assert.equal(second.vcache, false, 'the second video was answered from the first one\'s cache');
    assert.match(second.text, /BRAVO/);
    assert.doesNotMatch(second.text, /ALPHA/);
    // The cache is on: the miss above is the key's doing.
    assert.equal((await ocr(alpha)).vcache, true, 'the same video sent again is not a hit');
  });

  // Issue 21, finding 2: LiteLLM forwards a tool round trip with the assistant's content null.
  it('answers a tool round trip whose assistant message has tool_calls and content null or absent (openai SDK), and refuses one with neither', async () => {
    const openai = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0 });
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const roundTrip = (assistant: OpenAI.ChatCompletionAssistantMessageParam): OpenAI.ChatCompletionMessageParam[] => [
      { role: 'user', content: 'What is the weather in Paris?' }, assistant, { role: 'tool', tool_call_id: 'call_1', content: '{"temperature_c":18}' },
    ];
    for (const assistant of [{ role: 'assistant' as const, content: null, tool_calls: [call] }, { role: 'assistant' as const, tool_calls: [call] }]) {
      const answer = await openai.chat.completions.create({ model: 'service', max_tokens: 8, tools, messages: roundTrip(assistant) });
      assert.ok(['stop', 'length', 'tool_calls'].includes(answer.choices[0]!.finish_reason), JSON.stringify(answer));
    }
    await assert.rejects(openai.chat.completions.create({ model: 'service', max_tokens: 8, tools, messages: roundTrip({ role: 'assistant', content: null }) }),
      (e: unknown) => e instanceof OpenAI.APIError && e.status === 400);
    await assertStillServing();
  });
});
