import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../errors/service-error.ts';
import { testAttachmentLimits } from '../testing/attachment-limits.ts';
import { dataUrl } from '../testing/fixtures.ts';
import { electronicBook, liarDocx, openDocumentPresentation, openDocumentSpreadsheet, openDocumentText, plainZip, presentation, richTextDocument, spreadsheet, wordDocument, zipBombDocx } from '../testing/office-fixtures.ts';
import { resolveAttachments } from './attachments.ts';

const limits = testAttachmentLimits({ inlineMaxBytes: 4 * 1024 * 1024 });
const attach = (filename: string, mime: string, bytes: Buffer) =>
  resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename, file_data: dataUrl(mime, bytes) } }] }], limits);
const rejects = (status: number, code: string, message = /./) => (e: unknown) =>
  e instanceof ServiceError && e.status === status && e.code === code && message.test(e.message);
const OOXML = 'application/vnd.openxmlformats-officedocument';

describe('office document attachments', () => {
  it('are read as documents of the type their bytes show', async () => {
    const files: [string, string, Buffer][] = [
      ['a.docx', `${OOXML}.wordprocessingml.document`, await wordDocument({ heading: 'H', paragraphs: ['p'] })],
      ['a.xlsx', `${OOXML}.spreadsheetml.sheet`, await spreadsheet([{ name: 'S', rows: [['a', 1]] }])],
      ['a.pptx', `${OOXML}.presentationml.presentation`, await presentation([{ title: 'T' }])],
      ['a.odt', 'application/vnd.oasis.opendocument.text', openDocumentText(['p'])],
      ['a.ods', 'application/vnd.oasis.opendocument.spreadsheet', openDocumentSpreadsheet([['a']])],
      ['a.odp', 'application/vnd.oasis.opendocument.presentation', openDocumentPresentation([['a']])],
      ['a.epub', 'application/epub+zip', electronicBook('B', [{ heading: 'H', paragraphs: ['p'] }])],
      ['a.rtf', 'text/rtf', richTextDocument('p')],
    ];
    for (const [name, mime, bytes] of files) {
      const [read] = await attach(name, mime, bytes);
      assert.equal(read?.kind, 'document', name);
      assert.equal(read?.mime, mime === 'text/rtf' ? 'application/rtf' : mime, name);
    }
  });

  it('refuses a zip bomb disguised as a docx with 413 from its directory, inflating nothing', async () => {
    const bomb = zipBombDocx(512 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    await assert.rejects(attach('report.docx', `${OOXML}.wordprocessingml.document`, bomb),
      rejects(413, 'document_too_large', /more than 104857600 bytes \(DOCUMENT_MAX_INFLATED_BYTES\)/));
    assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024, 'the 512 MiB part was never inflated');
  });

  it('lets a zip whose directory lies about its sizes reach the reader, which counts real bytes', async () => {
    const [read] = await attach('report.docx', `${OOXML}.wordprocessingml.document`, liarDocx(256 * 1024 * 1024));
    assert.equal(read?.kind, 'document'); // the OCR task's tests show the reader refusing it
  });

  it('refuses with 400 a plain zip named .docx, and a docx declared as a spreadsheet', async () => {
    const zip = plainZip({ 'notes.txt': 'hello' });
    await assert.rejects(attach('a.docx', `${OOXML}.wordprocessingml.document`, zip), rejects(400, 'invalid_content', /but the content is application\/zip/));
    const docx = await wordDocument({ heading: 'H', paragraphs: ['p'] });
    await assert.rejects(attach('a.xlsx', `${OOXML}.spreadsheetml.sheet`, docx), rejects(400, 'invalid_content', /declared as .*sheet but the content is .*wordprocessingml/));
  });
});
