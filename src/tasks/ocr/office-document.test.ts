import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import type { OcrResult } from '../../contract/wire-types.ts';
import { ServiceError } from '../../errors/service-error.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import { renderTextImage, wordRecall } from '../../testing/fixtures.ts';
import {
  electronicBook, liarDocx, openDocumentPresentation, openDocumentSpreadsheet, openDocumentText, presentation, repeatedCellsSpreadsheet,
  richTextDocument, spreadsheet, wordDocument,
} from '../../testing/office-fixtures.ts';
import { taskInput } from '../../testing/task-input.ts';
import { documentLimitsOf, pdfLimitsOf, workerLimitsOf } from '../../wiring/create-tasks.ts';
import { DocumentReader } from './document-reader.ts';
import { createOcrTask } from './ocr-task.ts';
import { PdfReader } from './pdf-reader.ts';
import { TesseractReader } from './tesseract-reader.ts';

const OOXML = 'application/vnd.openxmlformats-officedocument';
const ODF = 'application/vnd.oasis.opendocument';
const TABLE = [['Region', 'Q1', 'Q2'], ['North', '10', '12'], ['South', '7', '9']];
const PICTURE = ['Delivery note 5530', 'Shipped to Oslo'];

describe('ocr task on office documents', { timeout: 300_000 }, () => {
  const config = loadConfig({});
  const reader = new TesseractReader(workerLimitsOf(config));
  const pdfs = new PdfReader(pdfLimitsOf(config));
  const offices = new DocumentReader(documentLimitsOf(config));
  const task = createOcrTask(reader, pdfs, offices);
  after(() => Promise.all([reader.close(), pdfs.close(), offices.close()]));

  const read = async (mime: string, bytes: Buffer, ocr = task): Promise<OcrResult> => {
    const attachment: Attachment = { kind: 'document', mime, bytes, param: 'messages[0].content[0]' };
    const entry = await ocr.run(taskInput({ attachments: [attachment] }));
    return entry.name === 'ocr' ? entry.result : assert.fail('not an ocr entry');
  };

  it('reads a docx as Markdown with its table as a Markdown table, and its picture by OCR', async () => {
    const docx = await wordDocument({ heading: 'Quarterly report', paragraphs: ['Revenue grew by 12 percent.'], table: TABLE, image: await renderTextImage(PICTURE) });
    const result = await read(`${OOXML}.wordprocessingml.document`, docx);
    const [text, picture] = result.pages;
    assert.deepEqual([text!.page, text!.method, text!.confidence, picture!.page, picture!.method, picture!.picture], [1, 'document', 1, 2, 'ocr', 'image1.png']);
    assert.match(text!.text, /^# Quarterly report\n\nRevenue grew by 12 percent\.\n\n\| Region \| Q1 \| Q2 \|\n\| --- \| --- \| --- \|\n\| North \| 10 \| 12 \|\n\| South \| 7 \| 9 \|/);
    assert.ok(wordRecall(PICTURE.join(' '), picture!.text) >= 0.8, picture!.text);
    assert.deepEqual(result.documents, [{ source: 'messages[0].content[0]', format: 'docx', page_count: 2, pages_read: 2 }]);
    assert.match(result.text, /North \| 10[\s\S]*Oslo/);
  });

  it('reads a spreadsheet\'s numbers under its sheet\'s name, and a presentation\'s numbered slides, tables and pictures', async () => {
    const xlsx = await spreadsheet([{ name: 'Sales', rows: [['Region', 'Revenue'], ['North', 48213.75], ['South', 1200]] }]);
    const sheet = await read(`${OOXML}.spreadsheetml.sheet`, xlsx);
    assert.match(sheet.text, /^## Sheet: Sales\n\n\| Region \| Revenue \|[\s\S]*\| North \| 48213\.75 \|/);
    assert.equal(sheet.documents?.[0]?.format, 'xlsx');
    const pptx = await presentation([
      { title: 'Roadmap', bullets: ['Ship video support', 'Ship office documents'] },
      { title: 'Numbers', table: [['metric', 'value'], ['users', '42']], image: await renderTextImage(PICTURE) },
    ]);
    const slides = await read(`${OOXML}.presentationml.presentation`, pptx);
    assert.ok(wordRecall('Roadmap Ship video support Ship office documents Numbers metric value users 42', slides.pages[0]!.text) === 1, slides.pages[0]!.text);
    assert.match(slides.pages[0]!.text, /^## Slide 1\n\nRoadmap[\s\S]*## Slide 2\n\nNumbers[\s\S]*\| users \| 42 \|/);
    assert.ok(wordRecall(PICTURE.join(' '), slides.pages[1]?.text ?? '') >= 0.8);
  });

  it('reads OpenDocument text, spreadsheets and presentations, EPUB and RTF', async () => {
    const odt = await read(`${ODF}.text`, openDocumentText(['Minutes of the meeting'], TABLE));
    assert.match(odt.text, /Minutes of the meeting\n\n\| Region \| Q1 \| Q2 \|/);
    const ods = await read(`${ODF}.spreadsheet`, openDocumentSpreadsheet(TABLE));
    assert.match(ods.text, /^## Sheet: Table1\n\n\| Region \| Q1 \| Q2 \|[\s\S]*\| South \| 7 \| 9 \|/);
    const odp = await read(`${ODF}.presentation`, openDocumentPresentation([['Roadmap', 'Ship video support'], ['Numbers']]));
    assert.match(odp.text, /^## Slide 1\n\nRoadmap\n\nShip video support\n\n## Slide 2\n\nNumbers$/);
    const epub = await read('application/epub+zip', electronicBook('Guide', [{ heading: 'Chapter one', paragraphs: ['Open the settings.'] }, { heading: 'Chapter two', paragraphs: ['Click save.'] }]));
    assert.match(epub.text, /# Chapter one\n\nOpen the settings\.\n\n# Chapter two\n\nClick save\./);
    const rtf = await read('application/rtf', richTextDocument('Café prices rose by 3 percent.'));
    assert.equal(rtf.text, 'Café prices rose by 3 percent.');
  });

  it('reads a spreadsheet whose few bytes repeat one cell 17 billion times only up to 100,000 cells', async () => {
    const sheet = await read(`${ODF}.spreadsheet`, repeatedCellsSpreadsheet());
    const cells = sheet.text.match(/\| x /g)?.length ?? 0;
    assert.ok(cells > 0 && cells <= 100_000, `${cells} cells`);
  });

  it('reads at most DOCUMENT_MAX_IMAGES pictures and says how many it left', async () => {
    const textOnly = new DocumentReader({ ...documentLimitsOf(config), maxImages: 0 });
    const docx = await wordDocument({ heading: 'H', paragraphs: ['p'], image: await renderTextImage(PICTURE) });
    const result = await read(`${OOXML}.wordprocessingml.document`, docx, createOcrTask(reader, pdfs, textOnly)).finally(() => textOnly.close());
    assert.deepEqual([result.pages.length, result.documents?.[0]?.page_count, result.documents?.[0]?.pages_read], [1, 2, 1]);
  });

  it('refuses with 413 a docx whose parts really inflate past the limit though its directory says less, then reads the next', async () => {
    await assert.rejects(read(`${OOXML}.wordprocessingml.document`, liarDocx(256 * 1024 * 1024)), (e: unknown) =>
      e instanceof ServiceError && e.status === 413 && e.code === 'document_too_large' && /DOCUMENT_MAX_INFLATED_BYTES/.test(e.message));
    const next = await read('application/rtf', richTextDocument('still here'));
    assert.equal(next.text, 'still here');
  });
});
