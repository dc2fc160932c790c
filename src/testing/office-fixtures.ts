// Office documents the tests make themselves, with known content: real .docx/.xlsx/.pptx written
// by the libraries that make them in the wild, an RTF, and hand-built zips that pose as a .docx
// while inflating far beyond their size (honestly, or with lying size fields).
import { constants, crc32, deflateRawSync } from 'node:zlib';
import { AlignmentType, Document, HeadingLevel, ImageRun, Packer, Paragraph, Table, TableCell, TableRow, WidthType } from 'docx';
import ExcelJS from 'exceljs';
import pptxgen from 'pptxgenjs';
import sharp from 'sharp';

/** A .docx: a Heading1, the paragraphs, a table whose first row is its header, and a PNG inline. */
export async function wordDocument(opts: { heading: string; paragraphs: string[]; table?: string[][]; image?: Buffer }): Promise<Buffer> {
  const children: (Paragraph | Table)[] = [
    new Paragraph({ text: opts.heading, heading: HeadingLevel.HEADING_1 }),
    ...opts.paragraphs.map((text) => new Paragraph({ text })),
  ];
  if (opts.table?.length) {
    children.push(new Table({
      width: { size: 100, type: WidthType.PERCENTAGE },
      rows: opts.table.map((row, i) => new TableRow({
        tableHeader: i === 0,
        children: row.map((cell) => new TableCell({ children: [new Paragraph({ text: cell })] })),
      })),
    }));
  }
  if (opts.image) {
    const { width = 1, height = 1 } = await sharp(opts.image).metadata();
    // Keep the aspect ratio; 500 px fits inside the default page margins.
    const scale = Math.min(1, 500 / width);
    children.push(new Paragraph({
      alignment: AlignmentType.CENTER,
      children: [new ImageRun({
        type: 'png',
        data: opts.image,
        transformation: { width: Math.round(width * scale), height: Math.max(1, Math.round(height * scale)) },
      })],
    }));
  }
  const doc = new Document({ sections: [{ children }] });
  return Packer.toBuffer(doc);
}

/** An .xlsx with one worksheet per entry; numbers stay numeric cells, not text. */
export async function spreadsheet(sheets: { name: string; rows: (string | number)[][] }[]): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  for (const sheet of sheets) workbook.addWorksheet(sheet.name).addRows(sheet.rows);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

// Node loads the package's ESM build, whose default export is the class; tsc under NodeNext reads
// its typings as CommonJS and sees the class one `.default` deeper. Accept either shape.
type PptxGenJS = typeof pptxgen.default;
const PptxGen = ((pptxgen as unknown as { default?: PptxGenJS }).default ?? pptxgen) as PptxGenJS;

/** A .pptx: one slide per entry with a title, then bullets, a table and a PNG below it. */
export async function presentation(slides: { title: string; bullets?: string[]; table?: string[][]; image?: Buffer }[]): Promise<Buffer> {
  const pptx = new PptxGen();
  pptx.layout = 'LAYOUT_16x9'; // 10 x 5.625 in
  for (const spec of slides) {
    const slide = pptx.addSlide();
    slide.addText(spec.title, { x: 0.5, y: 0.3, w: 9, h: 0.8, fontSize: 28, bold: true });
    let y = 1.2;
    if (spec.bullets?.length) {
      slide.addText(spec.bullets.map((text) => ({ text, options: { bullet: true, breakLine: true } })), { x: 0.5, y, w: 9, h: 1.5, fontSize: 18 });
      y += 1.6;
    }
    if (spec.table?.length) {
      slide.addTable(spec.table.map((row) => row.map((text) => ({ text }))), { x: 0.5, y, w: 9, fontSize: 14 });
      y += 0.4 * spec.table.length + 0.2;
    }
    if (spec.image) {
      const { width = 1, height = 1 } = await sharp(spec.image).metadata();
      const h = Math.max(0.5, 5.4 - y);
      slide.addImage({ data: `image/png;base64,${spec.image.toString('base64')}`, x: 0.5, y, h, w: (h * width) / height });
    }
  }
  const out = await pptx.write({ outputType: 'nodebuffer' });
  return Buffer.from(out as Uint8Array);
}

interface ZipEntry {
  name: string;
  /** Raw-deflated bytes. */
  deflated: Buffer;
  crc: number;
  /** The uncompressed size written to the headers; need not be the truth. */
  size: number;
}

/** A minimal zip container (no zip64, no data descriptors), entries in the given order. */
function zip(entries: ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
    local.writeUInt16LE(0x0800, 6); // flags: UTF-8 names
    local.writeUInt16LE(8, 8); // method: deflate
    local.writeUInt32LE(0x00210000, 10); // time 00:00, date 1980-01-01
    local.writeUInt32LE(entry.crc >>> 0, 14);
    local.writeUInt32LE(entry.deflated.length, 18);
    local.writeUInt32LE(entry.size, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, entry.deflated);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    local.copy(central, 6, 4, 30); // version needed .. name length are laid out alike
    // extra length, comment length, disk, internal and external attributes stay 0
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + entry.deflated.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

function smallEntry(name: string, text: string): ZipEntry {
  const data = Buffer.from(text, 'utf8');
  return { name, deflated: deflateRawSync(data), crc: crc32(data), size: data.length };
}

const CHUNK = 1 << 20;

/**
 * `head`, then `inflatedBytes - head - tail` spaces, then `tail`, raw-deflated in O(1 MiB) memory.
 * Each piece is deflated on its own and ended with a sync flush (byte-aligned, not final), so the
 * pieces concatenate into one valid stream; a 1 MiB run of spaces always deflates alike, so it is
 * deflated once and repeated. 1 MiB of spaces deflates to about 1 KiB (deflate tops out near 1:1032).
 */
function deflatedSpaces(head: string, tail: string, inflatedBytes: number): { deflated: Buffer; crc: number } {
  const headBytes = Buffer.from(head, 'utf8');
  const tailBytes = Buffer.from(tail, 'utf8');
  const spaces = inflatedBytes - headBytes.length - tailBytes.length;
  if (!Number.isSafeInteger(spaces) || spaces < 0) throw new RangeError(`inflatedBytes must be at least ${headBytes.length + tailBytes.length}`);
  const sync = { finishFlush: constants.Z_SYNC_FLUSH };
  const chunk = Buffer.alloc(CHUNK, 0x20);
  const chunkDeflated = deflateRawSync(chunk, { ...sync, level: 9 });
  const whole = Math.floor(spaces / CHUNK);
  const last = Buffer.concat([chunk.subarray(0, spaces % CHUNK), tailBytes]);
  const pieces = [deflateRawSync(headBytes, sync)];
  let crc = crc32(headBytes);
  for (let i = 0; i < whole; i++) {
    pieces.push(chunkDeflated);
    crc = crc32(chunk, crc);
  }
  pieces.push(deflateRawSync(last, { level: 9 }));
  crc = crc32(last, crc);
  return { deflated: Buffer.concat(pieces), crc };
}

const DOCX_CONTENT_TYPES = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
  + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
  + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
  + '<Default Extension="xml" ContentType="application/xml"/>'
  + '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
  + '</Types>';
const DOCX_RELS = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
  + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
  + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
  + '</Relationships>';
const DOCUMENT_RELS = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
  + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>';
// Well-formed: the run of spaces is whitespace between <w:body> and its one paragraph.
const DOCUMENT_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
  + '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>';
const DOCUMENT_TAIL = '<w:p><w:r><w:t>bomb</w:t></w:r></w:p></w:body></w:document>';

function bombDocx(inflatedBytes: number, declaredBytes: number): Buffer {
  if (inflatedBytes > 0xffffffff || declaredBytes > 0xffffffff) throw new RangeError('no zip64: sizes must fit in 32 bits');
  const { deflated, crc } = deflatedSpaces(DOCUMENT_HEAD, DOCUMENT_TAIL, inflatedBytes);
  return zip([
    // [Content_Types].xml first: file-type reads it to tell docx from a plain zip.
    smallEntry('[Content_Types].xml', DOCX_CONTENT_TYPES),
    smallEntry('_rels/.rels', DOCX_RELS),
    smallEntry('word/_rels/document.xml.rels', DOCUMENT_RELS),
    { name: 'word/document.xml', deflated, crc, size: declaredBytes },
  ]);
}

/**
 * A docx whose word/document.xml really inflates to `inflatedBytes`, as its headers say.
 * Costs about inflatedBytes / 1000 bytes of output and 1 MiB of working memory.
 */
export function zipBombDocx(inflatedBytes: number): Buffer {
  return bombDocx(inflatedBytes, inflatedBytes);
}

/**
 * Like zipBombDocx, but the local header and central directory declare `declaredBytes` for
 * word/document.xml: only a reader that counts what it inflates notices. The CRC is the real one.
 */
export function liarDocx(inflatedBytes: number, declaredBytes = 1000): Buffer {
  return bombDocx(inflatedBytes, declaredBytes);
}

/**
 * A minimal RTF holding the text; lines become paragraphs, non-ASCII becomes \uN escapes. \uc0
 * (no ANSI fallback after each \uN) because officeparser ignores \uc and would print the fallback.
 */
export function richTextDocument(text: string): Buffer {
  let body = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    const code = text.charCodeAt(i); // UTF-16 units: RTF writes astral characters as surrogate pairs
    if (ch === '\\' || ch === '{' || ch === '}') body += `\\${ch}`;
    else if (ch === '\n') body += '\\par\n';
    else if (ch === '\r') continue;
    else if (ch === '\t') body += '\\tab ';
    else if (code < 0x20) continue;
    else if (code < 0x80) body += ch;
    else body += `\\u${code > 0x7fff ? code - 0x10000 : code} `; // signed 16-bit N; the space ends the word
  }
  return Buffer.from(`{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Helvetica;}}\\f0\\fs24\\uc0 ${body}\\par\n}`, 'latin1');
}

const ODF = 'application/vnd.oasis.opendocument';
const ODF_NAMESPACES = ['office', 'text', 'table', 'draw'].map((ns) => `xmlns:${ns}="urn:oasis:names:tc:opendocument:xmlns:${ns === 'draw' ? 'drawing' : ns}:1.0"`).join(' ');
const cell = (text: string) => `<table:table-cell office:value-type="string"><text:p>${escapeXml(text)}</text:p></table:table-cell>`;
const odfTable = (table: string[][]) => `<table:table table:name="Table1"><table:table-column table:number-columns-repeated="${table[0]!.length}"/>`
  + `${table.map((row) => `<table:table-row>${row.map(cell).join('')}</table:table-row>`).join('')}</table:table>`;

/** A minimal OpenDocument file: `kind` is text, spreadsheet or presentation; `body` the XML inside its office:body. */
function openDocument(kind: 'text' | 'spreadsheet' | 'presentation', body: string): Buffer {
  const content = `<?xml version="1.0" encoding="UTF-8"?>\n<office:document-content ${ODF_NAMESPACES} office:version="1.2">`
    + `<office:body><office:${kind}>${body}</office:${kind}></office:body></office:document-content>`;
  const manifest = '<?xml version="1.0" encoding="UTF-8"?>\n'
    + '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
    + `<manifest:file-entry manifest:full-path="/" manifest:media-type="${ODF}.${kind}"/>`
    + '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>';
  return zip([smallEntry('mimetype', `${ODF}.${kind}`), smallEntry('META-INF/manifest.xml', manifest), smallEntry('content.xml', content)]);
}

/** An odt: the paragraphs, then the table (first row as its header). */
export const openDocumentText = (paragraphs: string[], table: string[][] = []): Buffer =>
  openDocument('text', paragraphs.map((p) => `<text:p>${escapeXml(p)}</text:p>`).join('') + (table.length ? odfTable(table) : ''));

/** An ods with one sheet holding the table. */
export const openDocumentSpreadsheet = (table: string[][]): Buffer => openDocument('spreadsheet', odfTable(table));

/**
 * Attacks a spreadsheet reader with repetition: an ods whose one row of one cell is repeated to a
 * sheet's whole extent (16384 columns × 1048576 rows), a few hundred bytes that name 17 billion cells.
 */
export const repeatedCellsSpreadsheet = (): Buffer => openDocument('spreadsheet', '<table:table table:name="Sheet1">'
  + '<table:table-row table:number-rows-repeated="1048576"><table:table-cell table:number-columns-repeated="16384" office:value-type="string">'
  + '<text:p>x</text:p></table:table-cell></table:table-row></table:table>');

/** An odp: one slide per entry, each a text box with its lines. */
export const openDocumentPresentation = (slides: string[][]): Buffer => openDocument('presentation', slides.map((lines, i) =>
  `<draw:page draw:name="page${i + 1}"><draw:frame><draw:text-box>${lines.map((l) => `<text:p>${escapeXml(l)}</text:p>`).join('')}</draw:text-box></draw:frame></draw:page>`).join(''));

/** A minimal EPUB 3: one chapter per entry, each a heading and its paragraphs, in spine order. */
export function electronicBook(title: string, chapters: { heading: string; paragraphs: string[] }[]): Buffer {
  const container = '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    + '<rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>';
  const opf = `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">`
    + `<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">fixture</dc:identifier><dc:title>${escapeXml(title)}</dc:title><dc:language>en</dc:language></metadata>`
    + `<manifest>${chapters.map((_, i) => `<item id="c${i}" href="c${i}.xhtml" media-type="application/xhtml+xml"/>`).join('')}</manifest>`
    + `<spine>${chapters.map((_, i) => `<itemref idref="c${i}"/>`).join('')}</spine></package>`;
  const page = (c: { heading: string; paragraphs: string[] }) => '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c</title></head>'
    + `<body><h1>${escapeXml(c.heading)}</h1>${c.paragraphs.map((p) => `<p>${escapeXml(p)}</p>`).join('')}</body></html>`;
  return zip([smallEntry('mimetype', 'application/epub+zip'), smallEntry('META-INF/container.xml', container), smallEntry('content.opf', opf),
    ...chapters.map((c, i) => smallEntry(`c${i}.xhtml`, page(c)))]);
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A plain zip of text files, e.g. one named .docx that holds no Word document. */
export const plainZip = (files: Record<string, string>): Buffer => zip(Object.entries(files).map(([name, text]) => smallEntry(name, text)));
