import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import ExcelJS from 'exceljs';
import { fileTypeFromBuffer } from 'file-type';
import { OfficeConverter, OfficeParser } from 'officeparser';
import sharp from 'sharp';
import yauzl from 'yauzl';
import { liarDocx, presentation, richTextDocument, spreadsheet, wordDocument, zipBombDocx } from './office-fixtures.ts';

const MiB = 1 << 20;

const png = () => sharp({ create: { width: 800, height: 400, channels: 3, background: '#3366cc' } }).png().toBuffer();

const markdown = async (buf: Buffer) => (await OfficeConverter.convert(buf, 'md', {})).value;

/** Every entry of the zip, read from its central directory, with the zip kept open for reading. */
function openZip(buf: Buffer, options: { validateEntrySizes?: boolean } = {}): Promise<{ zip: yauzl.ZipFile; entries: yauzl.Entry[] }> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true, autoClose: false, ...options }, (err, zip) => {
      if (err) return reject(err);
      const entries: yauzl.Entry[] = [];
      zip.on('entry', (entry: yauzl.Entry) => {
        entries.push(entry);
        zip.readEntry();
      });
      zip.on('end', () => resolve({ zip, entries }));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

/** Inflates an entry in streaming mode, keeping only the byte count and the CRC. */
async function inflateEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<{ bytes: number; crc: number }> {
  const stream = await new Promise<Readable>((resolve, reject) => {
    zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s)));
  });
  let bytes = 0;
  let crc = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    crc = crc32(chunk, crc);
  }
  return { bytes, crc };
}

test('wordDocument is a docx that officeparser renders with its heading, paragraphs and table', async () => {
  const buf = await wordDocument({
    heading: 'Quarterly report',
    paragraphs: ['Sales grew in the north.', 'The south held steady.'],
    table: [['Region', 'Q1', 'Q2'], ['North', '10', '12'], ['South', '7', '9']],
  });
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'docx');
  const md = await markdown(buf);
  assert.match(md, /^# Quarterly report\b/m);
  assert.match(md, /^Sales grew in the north\.$/m);
  assert.match(md, /^\| Region \| Q1 \| Q2 \|$/m);
  assert.match(md, /^\| North \| 10 \| 12 \|$/m);
});

test('wordDocument embeds the PNG, which officeparser extracts byte for byte', async () => {
  const image = await png();
  const buf = await wordDocument({ heading: 'Picture', paragraphs: ['Below is a picture.'], image });
  const ast = await OfficeParser.parseOffice(buf, { extractAttachments: true });
  const pngs = ast.attachments.filter((a) => a.mimeType === 'image/png');
  assert.equal(pngs.length, 1);
  assert.ok(Buffer.from(pngs[0]!.data, 'base64').equals(image));
});

test('spreadsheet is an xlsx with numeric cells that officeparser renders as tables', async () => {
  const buf = await spreadsheet([
    { name: 'Sales', rows: [['Region', 'Units'], ['North', 1234.5], ['South', 42]] },
    { name: 'Notes', rows: [['Checked by audit']] },
  ]);
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'xlsx');

  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(buf as unknown as ExcelJS.Buffer);
  assert.deepEqual(workbook.worksheets.map((s) => s.name), ['Sales', 'Notes']);
  assert.equal(workbook.getWorksheet('Sales')?.getCell('B2').value, 1234.5); // a number, not '1234.5'

  const md = await markdown(buf);
  assert.match(md, /^\| North \| 1234\.5 \|$/m);
  assert.match(md, /^\| Checked by audit \|$/m);
  // officeparser leaves sheet names out of the Markdown; sheets are only split by rules.
  assert.doesNotMatch(md, /Sales|Notes/);
});

test('presentation is a pptx that officeparser renders with titles, bullets, table and image', async () => {
  const image = await png();
  const buf = await presentation([
    { title: 'Roadmap', bullets: ['Ship the parser', 'Harden the limits'] },
    { title: 'Numbers', table: [['Team', 'Size'], ['Core', '5']], image },
  ]);
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'pptx');
  const md = await markdown(buf);
  assert.match(md, /^\*\*Roadmap\*\*$/m); // titles come out bold, not as headings
  assert.match(md, /^- Ship the parser$/m);
  assert.match(md, /^\| Core \| 5 \|$/m);

  const ast = await OfficeParser.parseOffice(buf, { extractAttachments: true });
  assert.ok(ast.attachments.some((a) => a.mimeType === 'image/png' && Buffer.from(a.data, 'base64').equals(image)));
});

test('richTextDocument is an RTF that officeparser reads back, escapes and non-ASCII included', async () => {
  const text = 'Braces {like} these and a back\\slash\nCafé ✓ 😀';
  const buf = richTextDocument(text);
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'rtf');
  assert.equal((await OfficeConverter.convert(buf, 'text', {})).value, text);
});

test('zipBombDocx sniffs as a small docx and honestly declares the size it inflates to', async () => {
  const buf = zipBombDocx(64 * MiB);
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'docx');
  assert.ok(buf.length < MiB, `${buf.length} bytes`);

  const { zip, entries } = await openZip(buf);
  const doc = entries.find((e) => e.fileName === 'word/document.xml');
  assert.ok(doc);
  assert.equal(doc.uncompressedSize, 64 * MiB);
  assert.deepEqual(await inflateEntry(zip, doc), { bytes: 64 * MiB, crc: doc.crc32 });
  zip.close();
});

test('liarDocx declares a tiny size for an entry that inflates to much more', async () => {
  const buf = liarDocx(64 * MiB);
  assert.equal((await fileTypeFromBuffer(buf))?.ext, 'docx');
  assert.ok(buf.length < MiB, `${buf.length} bytes`);

  const checked = await openZip(buf);
  const doc = checked.entries.find((e) => e.fileName === 'word/document.xml');
  assert.ok(doc);
  assert.equal(doc.uncompressedSize, 1000);
  // A reader that counts what it inflates catches the lie...
  await assert.rejects(inflateEntry(checked.zip, doc), /too many bytes/);
  checked.zip.close();

  // ...and one that trusts the headers gets all of it, with a CRC that matches.
  const trusting = await openZip(buf, { validateEntrySizes: false });
  const lied = trusting.entries.find((e) => e.fileName === 'word/document.xml')!;
  assert.deepEqual(await inflateEntry(trusting.zip, lied), { bytes: 64 * MiB, crc: lied.crc32 });
  trusting.zip.close();
});
