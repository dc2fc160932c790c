import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { createWorker, OEM, PSM, type Worker } from 'tesseract.js';
import type { OcrLine } from '../../contract/wire-types.ts';

export type { OcrLine };

export interface ReadImage {
  width: number;
  height: number;
  text: string;
  confidence: number;
  lines: OcrLine[];
}

/** Small text is read far better enlarged (measured: 8 px text from 15% to 0% character errors). */
const UPSCALE_BELOW_WIDTH = 2000;
/** …but a picture this large is not made four times larger. */
const UPSCALE_MAX_PIXELS = 16_000_000;

interface Box { x0: number; y0: number; x1: number; y1: number }

/**
 * Tesseract (tesseract.js, WebAssembly) with the English LSTM model from @tesseract.js-data/eng,
 * read from node_modules: nothing is downloaded, nothing cached to disk. This runs inside the OCR
 * worker process (see TesseractReader), where tesseract.js's own worker thread can only take that
 * process down; it is made on first use and kept.
 */
let engine: Promise<Worker> | undefined;

/** Starts Tesseract and loads its language data. */
export async function warmTesseract(): Promise<void> {
  await (engine ??= startTesseract());
}

function startTesseract(): Promise<Worker> {
  const dataDir = dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/eng/package.json'));
  return createWorker('eng', OEM.LSTM_ONLY, { langPath: join(dataDir, '4.0.0_best_int'), gzip: true, cacheMethod: 'none' })
    .then(async (worker) => {
      await worker.setParameters({ tessedit_pageseg_mode: PSM.AUTO, preserve_interword_spaces: '1' });
      return worker;
    });
}

/** The image's text, line by line with boxes and confidences, in the image's own pixels. */
export async function recognizeImage(image: Buffer): Promise<ReadImage> {
  const meta = await sharp(image).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const scale = width > 0 && width < UPSCALE_BELOW_WIDTH && width * height * 4 <= UPSCALE_MAX_PIXELS ? 2 : 1;
  const prepared = await sharp(image).flatten({ background: '#ffffff' }).greyscale()
    .resize({ width: Math.max(1, width * scale), kernel: 'lanczos3' }).png().toBuffer();
  const { data } = await (await (engine ??= startTesseract())).recognize(prepared, {}, { text: true, blocks: true });
  const box = (b: Box) => ({ x: b.x0 / scale, y: b.y0 / scale, width: (b.x1 - b.x0) / scale, height: (b.y1 - b.y0) / scale });
  const lines: OcrLine[] = (data.blocks ?? []).flatMap((block) => block.paragraphs.flatMap((p) => p.lines.map((line) => ({
    text: line.text.trim(),
    confidence: line.confidence / 100,
    bbox: box(line.bbox),
    words: line.words.map((w) => ({ text: w.text, confidence: w.confidence / 100, bbox: box(w.bbox) })),
  })))).filter((l) => l.text !== '');
  return { width, height, text: data.text.trim(), confidence: (data.confidence ?? 0) / 100, lines };
}
