// Hostile inputs at SERVICE_BASE_URL, replayed through HTTP: files that declare more than they
// hold, inputs that made patterns backtrack, bodies that lie about their framing. Each must get
// the right status and error envelope, and the server must go on answering other callers. The
// files are made here, in memory (src/testing/hostile-inputs.ts). Limits are the defaults.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, it } from 'node:test';
import { dataUrl } from '../src/testing/fixtures.ts';
import { blankPagesPdf, deflateBombPdf, hugePng, longVideo, repeatedAttachmentMarker, spacesAfterTag } from '../src/testing/hostile-inputs.ts';
import { liarDocx, zipBombDocx } from '../src/testing/office-fixtures.ts';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
/** SERVICE_CONTEXT_WINDOW names the deployment's context window in tokens, when it is small. */
const window = Number(process.env.SERVICE_CONTEXT_WINDOW ?? Infinity);
const openSchema = { type: 'json_schema', json_schema: { name: 'task', schema: {} } };

interface Answer { status: number; body: any }

/** A raw POST, so headers go out exactly as written (fetch would fix some of them). */
function post(body: Buffer | string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/chat/completions`, {
      method: 'POST',
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

const postJson = (body: unknown) => post(JSON.stringify(body));

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
    const other = await goodRequest();
    assert.equal(other.status, 200);
    assert.equal(hostileDone, false, 'the other caller was answered only after the 60-page PDF');
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
});
