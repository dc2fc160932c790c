import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { it } from 'node:test';
import { createInflate } from 'node:zlib';
import { PDFDocument, PDFName, PDFRawStream } from 'pdf-lib';
import sharp from 'sharp';
import { blankPagesPdf, deflateBombPdf, hugePng, manyLinksHtml, nestedTablesHtml, repeatedAttachmentMarker, spacesAfterTag } from './hostile-inputs.ts';

/** Inflates in streaming mode, keeping only the byte count and the first bytes. */
async function inflatedSize(compressed: Uint8Array): Promise<{ bytes: number; head: string }> {
  let bytes = 0;
  let head = '';
  await pipeline(Readable.from([Buffer.from(compressed)]), createInflate(), new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (head.length < 24) head += chunk.subarray(0, 24 - head.length).toString('latin1');
      bytes += chunk.length;
      done();
    },
  }));
  return { bytes, head };
}

/** The page's one content stream, still compressed. */
function contentStream(doc: PDFDocument): PDFRawStream {
  const contents = doc.getPage(0).node.Contents();
  assert.ok(contents instanceof PDFRawStream, 'one content stream');
  return contents;
}

it('hugePng declares 16000×16000 in ~30 KB, and is deterministic', async () => {
  const png = await hugePng(16000, 16000);
  assert.ok(png.length < 100_000, `${png.length} bytes`);
  const meta = await sharp(png).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height, meta.channels], ['png', 16000, 16000, 1]);
  assert.ok((await hugePng(16000, 16000)).equals(png));
});

it('hugePng is a whole image: a small one decodes to black pixels', async () => {
  const { data, info } = await sharp(await hugePng(77, 5)).raw().toBuffer({ resolveWithObject: true });
  assert.deepEqual([info.width, info.height], [77, 5]);
  assert.ok(data.every((v) => v === 0));
});

it('deflateBombPdf is a one-page PDF of a few hundred KB whose content inflates to 300 MB of moveto operators', async () => {
  const pdf = await deflateBombPdf(300_000_000);
  assert.ok(pdf.length < 1_000_000, `${pdf.length} bytes`);
  assert.equal(pdf.subarray(0, 8).toString('latin1'), '%PDF-1.7');
  const doc = await PDFDocument.load(pdf);
  assert.equal(doc.getPageCount(), 1);
  const stream = contentStream(doc);
  assert.equal(stream.dict.get(PDFName.of('Filter'))?.toString(), '/FlateDecode');
  const { bytes, head } = await inflatedSize(stream.contents);
  assert.ok(bytes >= 300_000_000, `${bytes} bytes inflated`);
  assert.equal(head, '0 0 m\n'.repeat(4));
});

it('deflateBombPdf can fill with spaces instead', async () => {
  const doc = await PDFDocument.load(await deflateBombPdf(10_000_001, 'spaces'));
  const { bytes, head } = await inflatedSize(contentStream(doc).contents);
  assert.equal(bytes, 10_000_001);
  assert.equal(head, ' '.repeat(24));
});

it('blankPagesPdf has N pages with nothing drawn on them, and is deterministic', async () => {
  const pdf = await blankPagesPdf(60);
  const doc = await PDFDocument.load(pdf);
  assert.equal(doc.getPageCount(), 60);
  assert.ok(doc.getPages().every((p) => p.node.Contents() === undefined));
  assert.ok((await blankPagesPdf(60)).equals(pdf));
});

it('spacesAfterTag opens a directive tag and never closes it', () => {
  assert.equal(spacesAfterTag('task', 1200), `<task>${' '.repeat(1200)}`);
  assert.equal(spacesAfterTag('guard', 3, '\t'), '<guard>\t\t\t');
});

it('repeatedAttachmentMarker repeats an unclosed marker', () => {
  const text = repeatedAttachmentMarker(20000);
  assert.equal(text.length, 16 * 20000);
  assert.ok(text.startsWith('[file attached: [file attached: '));
  assert.ok(!text.includes(']'));
});

it('manyLinksHtml is one page of n links', () => {
  const html = manyLinksHtml(2_000_000).toString();
  assert.equal(html.match(/<a href="\/x">x<\/a>/g)?.length, 2_000_000);
  assert.ok(html.startsWith('<!doctype html>') && html.endsWith('</body></html>'));
});

it('nestedTablesHtml nests n tables, each closed', () => {
  const html = nestedTablesHtml(1000).toString();
  assert.equal(html.split('<table>').length - 1, 1000);
  assert.equal(html.split('</table>').length - 1, 1000);
  assert.ok(html.includes('<td>cell<table>'));
});
