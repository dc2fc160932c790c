import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { OcrLine, ReadImage, recognizeImage, warmTesseract } from './tesseract-engine.ts';

export type { OcrLine, ReadImage };

/**
 * OCR by Tesseract in a worker process of its own, under the task deadline and heap bound, one
 * image at a time: tesseract.js runs its engine in a worker thread, and a thread that passes its
 * heap limit can take the whole server down, where a child process takes only itself.
 */
export class TesseractReader {
  private readonly worker: IsolatedWorker<{ recognizeImage: typeof recognizeImage; warmTesseract: typeof warmTesseract }>;

  constructor(limits: WorkerLimits) {
    this.worker = new IsolatedWorker(new URL('./tesseract-reader.worker.ts', import.meta.url), 'OCR', limits);
  }

  /** `caller` (an API key id) is counted in the queue's share. */
  read(image: Buffer, caller?: string): Promise<ReadImage> {
    return this.worker.runFor(caller, 'recognizeImage', image);
  }

  /** Starts Tesseract and loads its language data. */
  warm(): Promise<void> {
    return this.worker.run('warmTesseract');
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
