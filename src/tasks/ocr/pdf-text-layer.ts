import { createInflate } from 'node:zlib';
import { invalidRequest, payloadTooLarge } from '../../errors/service-error.ts';
import type { OcrLine } from './tesseract-reader.ts';

export interface PdfPageText {
  page: number;
  width: number;
  height: number;
  text: string;
  lines: OcrLine[];
}

interface TextItem { str: string; transform: number[]; width: number; height: number; hasEOL?: boolean }

export interface TextLayer {
  /** Pages the document has; only the first `maxPages` are read. */
  pageCount: number;
  pages: PdfPageText[];
}

/**
 * Each page's own text (the text layer), as lines with boxes in PDF points from the top-left, for
 * at most `maxPages` pages. Runs in the PDF reader's worker process: pdf.js parses on the thread
 * that calls it. Streams are inflated by a cheap count first, so that a deflate bomb is refused
 * before pdf.js would hold it in memory.
 */
export async function readTextLayer(pdf: Uint8Array, source: string, maxPages: number, maxInflatedBytes: number): Promise<TextLayer> {
  await checkInflatedSize(pdf, source, maxInflatedBytes);
  // Loaded on first use: pdf.js warns at import that it has no canvas, which only rendering needs.
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  let doc;
  try {
    // pdf.js wants a plain Uint8Array; a Buffer (as the bytes arrive here) it refuses.
    doc = await getDocument({ data: new Uint8Array(pdf.buffer, pdf.byteOffset, pdf.byteLength), isEvalSupported: false, useSystemFonts: false }).promise;
  } catch (err) {
    throw invalidRequest(`${source} is not a readable PDF: ${(err as Error).message}`, 'invalid_content', source);
  }
  try {
    const pages: PdfPageText[] = [];
    for (let n = 1; n <= Math.min(doc.numPages, maxPages); n++) {
      const page = await doc.getPage(n);
      const { width, height } = page.getViewport({ scale: 1 });
      const items = (await page.getTextContent()).items
        .flatMap((i) => ('str' in i && i.str.trim() !== '' ? [i as unknown as TextItem] : []));
      const lines = groupIntoLines(items, height);
      pages.push({ page: n, width, height, text: lines.map((l) => l.text).join('\n'), lines });
    }
    return { pageCount: doc.numPages, pages };
  } finally {
    await doc.destroy();
  }
}

/** Items on one baseline (within a third of their height) form a line, read left to right. */
function groupIntoLines(items: TextItem[], pageHeight: number): OcrLine[] {
  const rows: TextItem[][] = [];
  for (const item of [...items].sort((a, b) => b.transform[5]! - a.transform[5]! || a.transform[4]! - b.transform[4]!)) {
    const row = rows.find((r) => Math.abs(r[0]!.transform[5]! - item.transform[5]!) <= Math.max(1, item.height / 3));
    if (row) row.push(item);
    else rows.push([item]);
  }
  return rows.map((row) => {
    const words = row.sort((a, b) => a.transform[4]! - b.transform[4]!).map((item) => ({
      text: item.str.trim(),
      confidence: 1,
      bbox: { x: item.transform[4]!, y: Math.max(0, pageHeight - item.transform[5]! - item.height), width: item.width, height: item.height },
    }));
    const x = Math.min(...words.map((w) => w.bbox.x));
    const y = Math.min(...words.map((w) => w.bbox.y));
    const right = Math.max(...words.map((w) => w.bbox.x + w.bbox.width));
    const bottom = Math.max(...words.map((w) => w.bbox.y + w.bbox.height));
    return { text: words.map((w) => w.text).join(' '), confidence: 1, bbox: { x, y, width: right - x, height: bottom - y }, words };
  });
}

const STREAM = Buffer.from('stream');
const END_STREAM = Buffer.from('endstream');

/**
 * Inflates every stream of the file in turn, counting and discarding the output, and refuses the
 * file with 413 once the total passes `maxBytes`. Streams that are not deflated fail to inflate at
 * once and count nothing. indexOf scans keep it linear in the file's size.
 */
async function checkInflatedSize(pdf: Uint8Array, source: string, maxBytes: number): Promise<void> {
  const bytes = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.byteLength);
  let total = 0;
  for (let at = bytes.indexOf(STREAM); at >= 0; at = bytes.indexOf(STREAM, at + 1)) {
    let start = at + STREAM.length;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] !== 0x0a) continue; // "endstream", or the word in some text
    const end = bytes.indexOf(END_STREAM, start + 1);
    if (end < 0) break;
    total += await inflatedLength(bytes.subarray(start + 1, end), maxBytes - total);
    if (total > maxBytes) {
      throw payloadTooLarge('pdf_too_large',
        `${source}: the PDF's streams inflate to more than ${maxBytes} bytes (PDF_MAX_INFLATED_BYTES).`, source);
    }
    at = end;
  }
}

/** Bytes `data` inflates to, counting up to just past `budget`; 0 when it is not deflated. */
function inflatedLength(data: Buffer, budget: number): Promise<number> {
  return new Promise((resolve) => {
    const inflate = createInflate();
    let length = 0;
    inflate.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > budget) {
        inflate.destroy();
        resolve(length);
      }
    });
    inflate.on('error', () => resolve(length)); // not deflated, or cut short: what came out counts
    inflate.on('end', () => resolve(length));
    inflate.end(data);
  });
}
