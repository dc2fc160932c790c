import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import type { ChatCompletionResponse } from '../../contract/wire-types.ts';
import { documentLimitsOf, pdfLimitsOf, workerLimitsOf } from '../../wiring/create-tasks.ts';
import { DocumentReader } from '../../tasks/ocr/document-reader.ts';
import { createOcrTask } from '../../tasks/ocr/ocr-task.ts';
import { PdfReader } from '../../tasks/ocr/pdf-reader.ts';
import { TesseractReader } from '../../tasks/ocr/tesseract-reader.ts';
import { TaskRegistry } from '../../tasks/registry.ts';
import { dataUrl, spokenVideo } from '../../testing/fixtures.ts';
import { postCompletion, startTestServer, type TestServer } from '../../testing/test-server.ts';

const config = loadConfig({});
const ocrOf = (video: Buffer) => ({
  model: 'service',
  messages: [{ role: 'user', content: [
    { type: 'text', text: '<task>ocr</task>' },
    { type: 'file', file: { filename: 'clip.mp4', file_data: dataUrl('video/mp4', video) } },
  ] }],
});

describe('the verified cache with videos', { timeout: 300_000 }, () => {
  let server: TestServer;
  const reader = new TesseractReader(workerLimitsOf(config));
  const pdfs = new PdfReader(pdfLimitsOf(config));
  const offices = new DocumentReader(documentLimitsOf(config));
  before(async () => (server = await startTestServer({
    tasks: new TaskRegistry([createOcrTask(reader, pdfs, offices)], [reader, pdfs, offices]),
    cache: { scope: 'global', ttlSeconds: 60 },
  })));
  after(async () => { await server.close(); await Promise.all([reader.close(), pdfs.close(), offices.close()]); });

  const ocr = async (video: Buffer, headers: Record<string, string> = {}) => {
    const res = await postCompletion(server.baseUrl, ocrOf(video), headers);
    assert.equal(res.status, 200);
    return (await res.json()) as ChatCompletionResponse & { precontext?: unknown };
  };

  // The two videos differ only in their first slide: the same file name, the same last slide, the
  // same sound track (which, read last, was all the key saw of a video).
  it("never serves one caller's video answer for another video with the same sound track and file name", async () => {
    const alpha = await spokenVideo('The end of the show.', ['ALPHA SECRET 4721', 'THE END'], 'mp4');
    const bravo = await spokenVideo('The end of the show.', ['BRAVO PUBLIC 9034', 'THE END'], 'mp4');
    const first = await ocr(alpha);
    assert.equal(first.vcache, false);
    assert.match(first.choices[0]!.message.content ?? '', /ALPHA/);
    const { key } = await server.keys.create('another tenant');
    const second = await ocr(bravo, { Authorization: `Bearer ${key}` });
    assert.equal(second.vcache, false, "served the first caller's cached answer");
    assert.doesNotMatch(second.choices[0]!.message.content ?? '', /ALPHA/);
    assert.match(second.choices[0]!.message.content ?? '', /BRAVO/);
    assert.equal((await ocr(alpha, { Authorization: `Bearer ${key}` })).vcache, true, 'the same video sent again is a hit');
  });
});
