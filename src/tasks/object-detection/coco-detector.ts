import type { WorkerLimits } from '../../workers/isolated-worker.ts';
import { IsolatedWorker } from '../../workers/isolated-worker.ts';
import type { DetectedObject, detectObjects, loadDetector } from './coco-model.ts';

type DetectorJobs = { detect: typeof detectObjects; warm: typeof loadDetector };

/**
 * COCO object detection (see coco-model.ts) in its own worker process, with a deadline and a
 * memory bound: inference on a large picture takes seconds of CPU that must not block the event
 * loop. The model loads in the worker on first use.
 */
export class CocoDetector {
  private readonly worker: IsolatedWorker<DetectorJobs>;

  constructor(limits: WorkerLimits) {
    this.worker = new IsolatedWorker(new URL('./coco-detector.worker.ts', import.meta.url), 'object detection', limits);
  }

  /** `caller` (an API key id) is counted in the queue's share. */
  detect(image: Buffer, caller?: string): Promise<{ width: number; height: number; objects: DetectedObject[] }> {
    return this.worker.runFor(caller, 'detect', image);
  }

  /** Starts the worker and loads the model in it. */
  warm(): Promise<void> {
    return this.worker.run('warm');
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
