import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { ImageScores, loadModel, Region, scoreImage } from './image-model.ts';

/** What the guard needs of an image classifier (the real one, or a scripted one in tests). */
export interface ImageScorer {
  /** Scores one picture; `beings` are the people and animals found in it, where blood is looked for. */
  score(image: Buffer, beings: Region[]): Promise<ImageScores>;
  warm?(): Promise<void>;
  close?(): Promise<void>;
}

/**
 * nsfwjs's model and the blood measure (image-model.ts) in their own worker process, with the
 * tasks' deadline and memory bound: decoding and inference must not block the event loop. The
 * model loads in the worker with the first guarded picture, once.
 */
export class ImageClassifier implements ImageScorer {
  private readonly worker: IsolatedWorker<{ score: typeof scoreImage; warm: typeof loadModel }>;

  constructor(limits: WorkerLimits) {
    this.worker = new IsolatedWorker(new URL('./image-classifier.worker.ts', import.meta.url), 'image guard', limits);
  }

  score(image: Buffer, beings: Region[]): Promise<ImageScores> {
    return this.worker.run('score', image, beings);
  }

  warm(): Promise<void> {
    return this.worker.run('warm');
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
