// Built-in tasks, attachments and precontext at SERVICE_BASE_URL, with inputs the suite makes
// itself (text rendered to an image). Every task result is checked against openapi.yaml.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createChatCompletion, createServiceClient, ServiceResponseError } from '../client/index.ts';
import { readFileSync } from 'node:fs';
import { dataUrl, loginScreenshot, renderTextImage, speech, wordErrorRate } from '../src/testing/fixtures.ts';
import { assertMatchesSchema } from './contract-schemas.ts';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
const client = createServiceClient({ baseUrl, apiKey });
const openSchema = { type: 'json_schema' as const, json_schema: { name: 'task', schema: {} } };
const invoice = await renderTextImage(['Invoice 4721 from Northwind Traders', 'Total due: 12.50 EUR']);
const withImage = (text: string, url = dataUrl('image/png', invoice)) => ({
  role: 'user' as const,
  content: [{ type: 'text' as const, text }, { type: 'image_url' as const, image_url: { url } }],
});
const rejected = (status: number, pattern: RegExp) => (e: unknown) =>
  e instanceof ServiceResponseError && e.status === status && pattern.test(e.message);

describe(`tasks at ${baseUrl}`, () => {
  it('runs <task>ocr</task> directly: content and precontext hold the same entry, valid per the contract', async () => {
    const completion = await createChatCompletion(client, {
      model: 'service', response_format: openSchema,
      messages: [{ role: 'system', content: '<task>ocr</task>' }, withImage('Read this.')],
    });
    const entry = JSON.parse(completion.choices[0]!.message.content!);
    assertMatchesSchema('PrecontextEntry', entry);
    assert.deepEqual(completion.precontext, [entry]);
    assert.equal(entry.name, 'ocr');
    assert.match(entry.result.text, /Invoice 4721/);
  });

  it('refuses an unknown task with 400 listing the valid ones, and a closed response format', async () => {
    await assert.rejects(createChatCompletion(client, {
      model: 'service', messages: [{ role: 'system', content: '<task>summarize</task>' }, withImage('x')],
    }), rejected(400, /ocr, object_detection, gui_detection, web_search, scraper, speech_to_text, translate/));
    await assert.rejects(createChatCompletion(client, {
      model: 'service', messages: [{ role: 'system', content: '<task>ocr</task>' }, withImage('x')],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', required: ['a'] } as never } },
    }), rejected(400, /open JSON schema/));
  });

  it('answers a question about an image with its OCR text, and reports the ocr precontext', async () => {
    const completion = await createChatCompletion(client, {
      model: 'service', temperature: 0, max_tokens: 30,
      messages: [withImage('What is the invoice number? Answer with the number only.')],
    });
    assert.deepEqual(completion.precontext.map((p) => p.name), ['ocr', 'object_detection']);
    completion.precontext.forEach((p) => assertMatchesSchema('PrecontextEntry', p));
    assert.match(completion.choices[0]!.message.content ?? '', /4721/);
  });

  it('runs no internal task with x-service-bypass-moa: true', async () => {
    const completion = await createChatCompletion(client, {
      model: 'service', temperature: 0, max_tokens: 8, messages: [withImage('What is the invoice number?')],
    }, { 'x-service-bypass-moa': 'true' });
    assert.deepEqual(completion.precontext, []);
  });

  it('streams the precontext first only with x-show-additional-info: true', async () => {
    const stream = async (headers: Record<string, string>) => {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify({ model: 'service', stream: true, max_tokens: 8, temperature: 0, messages: [withImage('What does it say?')] }),
      });
      const contents = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {'))
        .map((e) => JSON.parse(e.slice(6)).choices?.[0]?.delta?.content ?? '').filter(Boolean);
      return contents;
    };
    const shown = await stream({ 'x-show-additional-info': 'true' });
    const first = /^<precontext>(.*)<\/precontext>$/s.exec(shown[0] ?? '');
    assert.ok(first, `first content: ${shown[0]}`);
    const entry = JSON.parse(first[1]!);
    assertMatchesSchema('PrecontextEntry', entry);
    assert.equal(entry.name, 'ocr');
    assert.ok(!(await stream({})).some((c: string) => c.includes('<precontext>')));
  });

  const runTask = async (task: string, user: object, instructions = '') => {
    const completion = await createChatCompletion(client, {
      model: 'service', response_format: openSchema,
      messages: [{ role: 'system', content: `<task>${task}</task> ${instructions}` }, user as never],
    });
    const entry = JSON.parse(completion.choices[0]!.message.content!);
    assertMatchesSchema('PrecontextEntry', entry);
    return entry;
  };
  const spoken = 'The quick brown fox jumps over the lazy dog. Please call me at noon tomorrow. Open the settings and click save.';
  const audioPart = () => ({ type: 'file' as const, file: { filename: 'note.wav', file_data: dataUrl('audio/wav', speech(spoken, 'wav')) } });

  it('transcribes speech (speech_to_text → stt) with timestamped segments', async () => {
    const entry = await runTask('speech_to_text', { role: 'user', content: [audioPart()] });
    assert.equal(entry.name, 'stt');
    assert.ok(wordErrorRate(spoken, entry.result.text) < 0.2, entry.result.text);
    assert.ok(entry.result.segments[0].end > entry.result.segments[0].start);
  });

  it('translates (translate) to the language the system message names', async () => {
    const entry = await runTask('translate', { role: 'user', content: 'The cat is black.' }, 'to Spanish');
    assert.deepEqual([entry.result.source_language, entry.result.target_language], ['en', 'es']);
    assert.match(entry.result.translated_text, /gato/i);
  });

  it('detects objects (object_detection) in a sample photo', async () => {
    const horse = readFileSync('.cache/fixtures/photos/horse.png');
    const entry = await runTask('object_detection', withImage('What is this?', dataUrl('image/png', horse)));
    assert.ok(entry.result.images[0].objects.some((o: { label: string }) => o.label === 'horse'));
  });

  it('finds buttons, inputs and text in a screenshot (gui_detection)', async () => {
    const { png } = await loginScreenshot();
    const entry = await runTask('gui_detection', withImage('Find the controls.', dataUrl('image/png', png)));
    const types = entry.result.images[0].elements.map((e: { type: string }) => e.type);
    for (const type of ['button', 'input', 'text', 'icon']) assert.ok(types.includes(type), `${type} in ${types}`);
  });

  it('transcribes attached audio for an ordinary chat (MoA), with the stt precontext', async () => {
    const completion = await createChatCompletion(client, {
      model: 'service', temperature: 0, max_tokens: 20,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What time does the caller suggest?' }, audioPart()] }],
    });
    assert.deepEqual(completion.precontext.map((p) => p.name), ['stt']);
    const entry = completion.precontext[0]!;
    assert.ok(entry.name === 'stt' && wordErrorRate(spoken, entry.result.text) < 0.2, JSON.stringify(entry));
  });

  it('refuses URLs to loopback and cloud-metadata addresses with 400', async () => {
    for (const url of ['http://127.0.0.1/invoice.png', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]:8080/x.png']) {
      await assert.rejects(createChatCompletion(client, { model: 'service', messages: [withImage('x', url)] }),
        rejected(400, /may not be fetched/), url);
    }
  });

  it('searches the web (web_search) when the deployment has a search provider', { skip: process.env.SERVICE_HAS_SEARCH !== 'true' }, async () => {
    const entry = await runTask('web_search', { role: 'user', content: 'weather in Paris' });
    assert.equal(entry.result.query, 'weather in Paris');
    assert.ok(entry.result.results.length > 0 && entry.result.results.every((r: { url: string }) => /^https?:\/\//.test(r.url)));
  });

  it('scrapes an attached HTML page (scraper): title, text, links and tables', async () => {
    const html = '<html><head><title>Prices</title></head><body><p>Fresh today.</p><a href="https://example.org/tea">Tea</a>'
      + '<table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>3.50</td></tr></table></body></html>';
    const entry = await runTask('scraper', { role: 'user', content: [{ type: 'file', file: { filename: 'prices.html', file_data: dataUrl('text/html', Buffer.from(html)) } }] });
    assert.equal(entry.result.title, 'Prices');
    assert.deepEqual(entry.result.tables, [{ headers: ['Item', 'Price'], rows: [['Tea', '3.50']] }]);
    assert.deepEqual(entry.result.links, [{ text: 'Tea', url: 'https://example.org/tea' }]);
  });

  it('answers web_search without a configured provider with 503 saying how to configure one', { skip: process.env.SERVICE_HAS_SEARCH === 'true' }, async () => {
    await assert.rejects(createChatCompletion(client, {
      model: 'service', messages: [{ role: 'system', content: '<task>web_search</task>' }, { role: 'user', content: 'weather in Paris' }],
    }), rejected(503, /SEARXNG_URL/));
  });
});
