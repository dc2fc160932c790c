import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { characterErrorRate, dataUrl, renderTextImage, scannedPdf, spokenVideo, textPdf, wordRecall } from '../../testing/fixtures.ts';
import { resolveAttachments } from '../../inputs/attachments.ts';
import { testAttachmentLimits } from '../../testing/attachment-limits.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import { taskInput } from '../../testing/task-input.ts';
import { createOcrTask } from './ocr-task.ts';
import { TesseractReader } from './tesseract-reader.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { blankPagesPdf, deflateBombPdf } from '../../testing/hostile-inputs.ts';
import { PdfReader } from './pdf-reader.ts';
import { loadConfig } from '../../config.ts';
import { documentLimitsOf, pdfLimitsOf, workerLimitsOf } from '../../wiring/create-tasks.ts';
import { DocumentReader } from './document-reader.ts';

const LINES = ['Invoice 4721 from Northwind Traders', 'Total due: 12.50 EUR by 30 June', 'Thank you for your order'];
const config = loadConfig({});
const reader = new TesseractReader(workerLimitsOf(config));
const pdfs = new PdfReader(pdfLimitsOf(config));
const offices = new DocumentReader(documentLimitsOf(config));
const task = createOcrTask(reader, pdfs, offices);
const attach = (kind: Attachment['kind'], mime: string, bytes: Buffer): Attachment => ({ kind, mime, bytes, param: 'messages[0].content[0]' });
const run = (attachment: Attachment) => task.run(taskInput({ attachments: [attachment] }));

describe('ocr task', () => {
  after(() => Promise.all([reader.close(), pdfs.close(), offices.close()]));

  for (const [name, dpi, floor] of [['large text', 200, 0.02], ['small text', 100, 0.05]] as const) {
    it(`reads ${name} from an image with a character error rate under ${floor * 100}%`, async () => {
      const entry = await run(attach('image', 'image/png', await renderTextImage(LINES, { dpi })));
      assert.equal(entry.name, 'ocr');
      if (entry.name !== 'ocr') return;
      const cer = characterErrorRate(LINES.join('\n'), entry.result.text);
      assert.ok(cer < floor, `CER ${cer} for ${JSON.stringify(entry.result.text)}`);
      const page = entry.result.pages[0]!;
      assert.equal(page.method, 'ocr');
      assert.equal(page.lines.length, 3);
      const word = page.lines[0]!.words.find((w) => w.text === '4721')!;
      assert.ok(word.confidence > 0.5 && word.bbox.width > 0 && word.bbox.x < page.width);
    });
  }

  it('takes a PDF text layer as it is', async () => {
    const entry = await run(attach('pdf', 'application/pdf', await textPdf(LINES)));
    if (entry.name !== 'ocr') return assert.fail('not an ocr entry');
    assert.equal(entry.result.pages[0]!.method, 'text_layer');
    assert.equal(entry.result.text, LINES.join('\n'));
    assert.equal(entry.result.pages[0]!.lines[1]!.words.length > 0, true);
  });

  it('reads a scanned PDF page by OCR', async () => {
    const entry = await run(attach('pdf', 'application/pdf', await scannedPdf(LINES)));
    if (entry.name !== 'ocr') return assert.fail('not an ocr entry');
    assert.equal(entry.result.pages[0]!.method, 'ocr');
    const cer = characterErrorRate(LINES.join('\n'), entry.result.text);
    assert.ok(cer < 0.05, `CER ${cer} for ${JSON.stringify(entry.result.text)}`);
  });
  it('reads the frames of a video, each with its number and time', async () => {
    const [first, second] = await resolveAttachments([{ role: 'user', content: [{ type: 'file', file: {
      filename: 'talk.mp4', file_data: dataUrl('video/mp4', await spokenVideo('', ['Northwind Traders', 'Invoice 4721'], 'mp4')) } }] }],
    testAttachmentLimits());
    const entry = await task.run(taskInput({ attachments: [first!, second!] }));
    if (entry.name !== 'ocr') return assert.fail('not an ocr entry');
    assert.deepEqual(entry.result.pages.map((p) => [p.page, p.method, p.time_seconds]), [[1, 'ocr', first!.frame!.seconds], [2, 'ocr', second!.frame!.seconds]]);
    assert.ok(wordRecall('Northwind Traders Invoice 4721', entry.result.text) === 1, entry.result.text);
  });
});

describe('ocr task on hostile PDFs', { timeout: 300_000 }, () => {
  const config = loadConfig({ PDF_MAX_PAGES: '3' });
  const reader = new TesseractReader(workerLimitsOf(config));
  const pdfs = new PdfReader(pdfLimitsOf(config));
  const offices = new DocumentReader(documentLimitsOf(config));
  const task = createOcrTask(reader, pdfs, offices);
  after(() => Promise.all([reader.close(), pdfs.close(), offices.close()]));

  it('reads at most PDF_MAX_PAGES pages and says how many of how many it read', async () => {
    const entry = await task.run(taskInput({ attachments: [attach('pdf', 'application/pdf', await blankPagesPdf(8))] }));
    if (entry.name !== 'ocr') return assert.fail('not an ocr entry');
    assert.deepEqual(entry.result.documents, [{ source: 'messages[0].content[0]', format: 'pdf', page_count: 8, pages_read: 3 }]);
    assert.deepEqual(entry.result.pages.map((p) => [p.page, p.method, p.text]), [[1, 'ocr', ''], [2, 'ocr', ''], [3, 'ocr', '']]);
  });

  it('refuses a deflate bomb with 413 pdf_too_large, naming the limit', async () => {
    const bomb = await deflateBombPdf(config.tasks.pdfMaxInflatedBytes + 32 * 1024 * 1024);
    await assert.rejects(task.run(taskInput({ attachments: [attach('pdf', 'application/pdf', bomb)] })), (e: unknown) =>
      e instanceof ServiceError && e.status === 413 && e.code === 'pdf_too_large' && /PDF_MAX_INFLATED_BYTES/.test(e.message));
  });

  it('answers a file that is not a PDF inside with 400 invalid_content', async () => {
    await assert.rejects(task.run(taskInput({ attachments: [attach('pdf', 'application/pdf', Buffer.from('%PDF-1.7\nnonsense'))] })),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && e.code === 'invalid_content');
  });
});
