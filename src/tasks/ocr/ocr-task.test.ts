import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { characterErrorRate, renderTextImage, scannedPdf, textPdf } from '../../testing/fixtures.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import { taskInput } from '../../testing/task-input.ts';
import { createOcrTask } from './ocr-task.ts';
import { TesseractReader } from './tesseract-reader.ts';

const LINES = ['Invoice 4721 from Northwind Traders', 'Total due: 12.50 EUR by 30 June', 'Thank you for your order'];
const reader = new TesseractReader();
const task = createOcrTask(reader);
const attach = (kind: Attachment['kind'], mime: string, bytes: Buffer): Attachment => ({ kind, mime, bytes, param: 'messages[0].content[0]' });
const run = (attachment: Attachment) => task.run(taskInput({ attachments: [attachment] }));

describe('ocr task', () => {
  after(() => reader.close());

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
});
