import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { OcrLine } from './tesseract-reader.ts';

const run = promisify(execFile);

export interface PdfPageText {
  page: number;
  width: number;
  height: number;
  text: string;
  lines: OcrLine[];
}

interface TextItem { str: string; transform: number[]; width: number; height: number; hasEOL?: boolean }

/** Each page's own text (the text layer), as lines with boxes in PDF points from the top-left. */
export async function readTextLayer(pdf: Buffer): Promise<PdfPageText[]> {
  // Loaded on first use: pdf.js warns at import that it has no canvas, which only rendering needs.
  const { getDocument } = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await getDocument({ data: new Uint8Array(pdf), isEvalSupported: false, useSystemFonts: false }).promise;
  try {
    const pages: PdfPageText[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const { width, height } = page.getViewport({ scale: 1 });
      const items = (await page.getTextContent()).items
        .flatMap((i) => ('str' in i && i.str.trim() !== '' ? [i as unknown as TextItem] : []));
      const lines = groupIntoLines(items, height);
      pages.push({ page: n, width, height, text: lines.map((l) => l.text).join('\n'), lines });
    }
    return pages;
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

/** Renders pages to PNG with poppler's pdftoppm (clearer for OCR than a JS canvas). */
export async function renderPages(pdf: Buffer, pages: number[], dpi = 200): Promise<Map<number, Buffer>> {
  const dir = await mkdtemp(join(tmpdir(), 'pdf-'));
  try {
    await writeFile(join(dir, 'in.pdf'), pdf);
    const rendered = new Map<number, Buffer>();
    for (const page of pages) {
      await run('pdftoppm', ['-r', String(dpi), '-f', String(page), '-l', String(page), '-png', join(dir, 'in.pdf'), join(dir, `p${page}`)], { timeout: 60_000 });
      const file = (await readdir(dir)).find((f) => f.startsWith(`p${page}-`) || f === `p${page}.png`);
      if (file) rendered.set(page, await readFile(join(dir, file)));
    }
    return rendered;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
