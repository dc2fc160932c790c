import sharp from 'sharp';
import type { GuiDetectionResult } from '../../contract/wire-types.ts';
import type { TesseractReader } from '../ocr/tesseract-reader.ts';
import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { findShapes } from './gui-shapes.ts';

type GuiImage = GuiDetectionResult['images'][number];
type Element = GuiImage['elements'][number];
type Box = Element['bbox'];

/**
 * GUI elements in a screenshot, without a trained model: OCR finds the text; the shapes of the
 * regions unlike the background (gui-shapes.ts, in a worker process) give buttons, inputs and
 * icons. A button's label is read again from its own crop, inverted when it is light on dark,
 * which whole-screen OCR misses.
 */
export class GuiDetector {
  private readonly worker: IsolatedWorker<{ findShapes: typeof findShapes }>;

  constructor(private readonly reader: TesseractReader, limits: WorkerLimits) {
    this.worker = new IsolatedWorker(new URL('./gui-shapes.worker.ts', import.meta.url), 'GUI detection', limits);
  }

  close(): Promise<void> {
    return this.worker.close();
  }

  /** `caller` (an API key id) is counted in the queues' shares. */
  async detect(image: Buffer, caller?: string): Promise<Omit<GuiImage, 'source'>> {
    const { width, height, shapes } = await this.worker.runFor(caller, 'findShapes', image);
    const read = await this.reader.read(image, caller);
    const words = read.lines.flatMap((l) => l.words).filter(isWord);
    const elements: Element[] = [];
    for (const { kind, ...box } of shapes) {
      if (kind === 'icon') {
        if (words.some((w) => overlap(box, w.bbox) > 0.3)) continue; // a glyph of some text, not an icon
        elements.push({ type: 'icon', score: 0.5, bbox: box });
        continue;
      }
      const inside = words.filter((w) => contains(box, w.bbox)).map((w) => w.text).join(' ');
      const label = kind === 'button' && !inside ? await readLabel(image, box, this.reader, caller) : inside;
      elements.push({ type: kind, ...(label ? { text: label } : {}), score: kind === 'button' ? 0.8 : 0.7, bbox: box });
    }
    const widgets = elements.filter((e) => e.type === 'button' || e.type === 'input');
    for (const line of read.lines) {
      const lineWords = line.words.filter((w) => isWord(w) && !widgets.some((e) => contains(e.bbox, w.bbox)));
      if (lineWords.length === 0) continue;
      elements.push({ type: 'text', text: lineWords.map((w) => w.text).join(' '), score: line.confidence, bbox: union(lineWords.map((w) => w.bbox)) });
    }
    return { width, height, elements };
  }
}

/** OCR also "reads" borders and shapes (`]`, `®`): a word must hold a letter or a digit. */
const isWord = (w: { text: string; confidence: number }) => w.confidence > 0.3 && /[\p{L}\p{N}]/u.test(w.text);

/** A label drawn light on dark: crop, invert, binarise, enlarge, and read it alone. */
async function readLabel(image: Buffer, box: Box, reader: TesseractReader, caller: string | undefined): Promise<string> {
  // Separate pipelines: sharp applies its operations in a fixed order, not in the order written.
  const inverted = await sharp(image).flatten({ background: '#ffffff' })
    .extract({ left: box.x, top: box.y, width: box.width, height: box.height }).greyscale().negate().png().toBuffer();
  const clean = await sharp(inverted).threshold(128).png().toBuffer();
  const ready = await sharp(clean).extend({ top: 12, bottom: 12, left: 12, right: 12, background: '#ffffff' })
    .resize({ width: (box.width + 24) * 3 }).png().toBuffer();
  return (await reader.read(ready, caller)).lines.flatMap((l) => l.words).filter(isWord).map((w) => w.text).join(' ');
}

const contains = (outer: Box, inner: Box) =>
  inner.x >= outer.x - 2 && inner.y >= outer.y - 2 && inner.x + inner.width <= outer.x + outer.width + 2 && inner.y + inner.height <= outer.y + outer.height + 2;

/** The share of `a` that lies inside `b`. */
function overlap(a: Box, b: Box): number {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  return w > 0 && h > 0 ? (w * h) / Math.max(1, a.width * a.height) : 0;
}

function union(boxes: Box[]): Box {
  const x = Math.min(...boxes.map((b) => b.x));
  const y = Math.min(...boxes.map((b) => b.y));
  return { x, y, width: Math.max(...boxes.map((b) => b.x + b.width)) - x, height: Math.max(...boxes.map((b) => b.y + b.height)) - y };
}
