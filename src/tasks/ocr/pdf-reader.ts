import type { WorkerLimits } from '../../workers/isolated-worker.ts';
import { IsolatedWorker } from '../../workers/isolated-worker.ts';
import { runBounded } from '../../workers/bounded-process.ts';
import type { PdfPageText, readTextLayer, TextLayer } from './pdf-text-layer.ts';

export type { PdfPageText, TextLayer };

export interface PdfLimits extends WorkerLimits {
  /** `PDF_MAX_PAGES`: pages read from one PDF; the rest are left out, and the result says so. */
  maxPages: number;
  /** `PDF_MAX_INFLATED_BYTES`: the file's streams, inflated, together. */
  maxInflatedBytes: number;
  /** `IMAGE_MAX_PIXELS`: a rendered page is drawn at a resolution that keeps under it. */
  maxPixels: number;
}

/** Clearer for OCR than less; lowered for a page so large that it would pass `maxPixels`. */
const RENDER_DPI = 200;

/**
 * PDFs, with bounded work: pdf.js reads the text layer in a worker process, and poppler's pdftoppm
 * renders a page without one (a scan) in a child process, both under the task deadline.
 */
export class PdfReader {
  private readonly worker: IsolatedWorker<{ readTextLayer: typeof readTextLayer }>;

  constructor(private readonly limits: PdfLimits) {
    this.worker = new IsolatedWorker(new URL('./pdf-reader.worker.ts', import.meta.url), 'PDF reader', limits);
  }

  /** `source` names the file in errors, e.g. `messages[0].content[1]`. */
  textLayer(pdf: Buffer, source: string, caller?: string): Promise<TextLayer> {
    return this.worker.runFor(caller, 'readTextLayer', pdf, source, this.limits.maxPages, this.limits.maxInflatedBytes);
  }

  /** The page as PNG, from pdftoppm (given the PDF on stdin, it writes the PNG to stdout). */
  renderPage(pdf: Buffer, page: PdfPageText): Promise<Buffer> {
    const squareInches = (page.width / 72) * (page.height / 72);
    const dpi = Math.max(1, Math.min(RENDER_DPI, Math.floor(Math.sqrt(this.limits.maxPixels / Math.max(squareInches, 1e-6)))));
    return runBounded('pdftoppm', ['-r', String(dpi), '-f', String(page.page), '-l', String(page.page), '-singlefile', '-png', '-'], {
      what: 'PDF page rendering', input: pdf, limits: this.limits, maxOutputBytes: this.limits.maxPixels * 4,
    });
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
