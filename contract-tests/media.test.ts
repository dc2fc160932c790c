// Video and office documents at SERVICE_BASE_URL, sent as the official openai SDK sends files:
// a video's sound is transcribed and its frames read; a docx, an xlsx and a pptx are read as
// Markdown. The inputs are made here (espeak-ng, ffmpeg, docx, exceljs, pptxgenjs); every
// precontext entry is checked against openapi.yaml.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { dataUrl, renderTextImage, spokenVideo, wordErrorRate, wordRecall } from '../src/testing/fixtures.ts';
import { presentation, spreadsheet, wordDocument } from '../src/testing/office-fixtures.ts';
import { assertMatchesSchema } from './contract-schemas.ts';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
const openai = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0 });
const OOXML = 'application/vnd.openxmlformats-officedocument';
const SENTENCE = 'The quick brown fox jumps over the lazy dog. Please call me at noon tomorrow. Open the settings and click save.';
const SLIDE = 'Quarterly Budget';

type Entry = { name: string; result: any };
const file = (filename: string, mime: string, bytes: Buffer): ChatCompletionContentPart =>
  ({ type: 'file', file: { filename, file_data: dataUrl(mime, bytes) } });
const ask = (text: string, part: ChatCompletionContentPart): ChatCompletionMessageParam[] =>
  [{ role: 'user', content: [{ type: 'text', text }, part] }];

/** The completion's precontext, each entry valid per the contract, by name. */
async function precontextOf(messages: ChatCompletionMessageParam[]): Promise<{ entries: Map<string, Entry>; answer: string }> {
  const completion = await openai.chat.completions.create({ model: 'service', temperature: 0, max_tokens: 24, messages });
  const precontext = (completion as unknown as { precontext: Entry[] }).precontext;
  precontext.forEach((entry) => assertMatchesSchema('PrecontextEntry', entry));
  return { entries: new Map(precontext.map((e) => [e.name, e])), answer: completion.choices[0]!.message.content ?? '' };
}

/** `<task>NAME</task>` on one attachment: the entry, valid per the contract. */
async function runTask(name: string, part: ChatCompletionContentPart): Promise<Entry> {
  const completion = await openai.chat.completions.create({
    model: 'service', response_format: { type: 'json_schema', json_schema: { name: 'task', schema: {} } },
    messages: [{ role: 'system', content: `<task>${name}</task>` }, ...ask('Read this.', part)],
  });
  const entry = JSON.parse(completion.choices[0]!.message.content!) as Entry;
  assertMatchesSchema('PrecontextEntry', entry);
  return entry;
}

describe(`video at ${baseUrl}`, async () => {
  const video = file('talk.mp4', 'video/mp4', await spokenVideo(SENTENCE, [SLIDE, 'Noon meeting'], 'mp4'));

  it('answers about a video: the precontext holds its transcript and the text of its frames, each timed', async () => {
    const { entries } = await precontextOf(ask('When should I call, and what is the slide about?', video));
    assert.deepEqual([...entries.keys()].sort(), ['object_detection', 'ocr', 'stt']);
    const stt = entries.get('stt')!.result;
    assert.ok(wordErrorRate(SENTENCE, stt.text) < 0.25, stt.text);
    assert.ok(stt.segments.every((s: { start: number; end: number }) => s.end > s.start));
    const ocr = entries.get('ocr')!.result;
    assert.ok(wordRecall(SLIDE, ocr.text) === 1, ocr.text);
    const times = ocr.pages.map((p: { time_seconds: number }) => p.time_seconds);
    assert.ok(times.length >= 2 && times.every((t: number, i: number) => t >= 0 && (i === 0 || t > times[i - 1])), JSON.stringify(times));
  });

  it('runs speech_to_text, ocr and object_detection on a video in task mode', async () => {
    const stt = await runTask('speech_to_text', video);
    assert.ok(stt.name === 'stt' && wordErrorRate(SENTENCE, stt.result.text) < 0.25, stt.result.text);
    const ocr = await runTask('ocr', video);
    assert.ok(wordRecall(`${SLIDE} Noon meeting`, ocr.result.text) >= 0.75, ocr.result.text);
    const objects = await runTask('object_detection', video);
    assert.ok(objects.result.images.length >= 2 && objects.result.images.every((i: { time_seconds?: number }) => i.time_seconds !== undefined));
  });
});

describe(`office documents at ${baseUrl}`, async () => {
  const docx = file('report.docx', `${OOXML}.wordprocessingml.document`, await wordDocument({
    heading: 'Quarterly report', paragraphs: ['Revenue grew by 12 percent.'],
    table: [['Region', 'Q1', 'Q2'], ['North', '10', '12']], image: await renderTextImage(['Delivery note 5530']),
  }));
  const xlsx = file('sales.xlsx', `${OOXML}.spreadsheetml.sheet`, await spreadsheet([{ name: 'Sales', rows: [['Region', 'Revenue'], ['North', 48213.75], ['South', 1200]] }]));
  const pptx = file('plan.pptx', `${OOXML}.presentationml.presentation`, await presentation([
    { title: 'Roadmap', bullets: ['Ship video support'] }, { title: 'Numbers', table: [['metric', 'value'], ['users', '42']] },
  ]));

  it('reads a docx: its text, its table as a Markdown table, and the text of its picture', async () => {
    const ocr = (await precontextOf(ask('Summarise the report.', docx))).entries.get('ocr')!.result;
    assert.match(ocr.text, /# Quarterly report[\s\S]*\| North \| 10 \| 12 \|/);
    assert.ok(wordRecall('Delivery note 5530', ocr.pages[1]?.text ?? '') >= 0.66, JSON.stringify(ocr.pages[1]));
    assert.deepEqual(ocr.documents, [{ source: 'messages[0].content[1]', format: 'docx', page_count: 2, pages_read: 2 }]);
  });

  it('answers a question about a number in a spreadsheet from it (the precontext holds the number)', async () => {
    const { entries, answer } = await precontextOf(ask('What was the revenue of the North region?', xlsx));
    assert.match(entries.get('ocr')!.result.text, /\| North \| 48213\.75 \|/);
    assert.ok(answer.length > 0);
  });

  it('reads a pptx: slide titles, bullets and tables', async () => {
    const ocr = (await precontextOf(ask('What is on the roadmap?', pptx))).entries.get('ocr')!.result;
    assert.ok(wordRecall('Roadmap Ship video support Numbers', ocr.text) === 1, ocr.text);
    assert.match(ocr.text, /\| users \| 42 \|/);
  });

  it('returns a document in the OCR result shape with <task>ocr</task>', async () => {
    const entry = await runTask('ocr', xlsx);
    assert.deepEqual(entry.result.pages.map((p: { method: string }) => p.method), ['document']);
    assert.equal(entry.result.documents[0].format, 'xlsx');
  });
});
