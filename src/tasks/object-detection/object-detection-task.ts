import { attachmentsFor, frameTime, type Task } from '../task.ts';
import type { CocoDetector } from './coco-detector.ts';

/** Labels, scores and boxes of common (COCO) objects in each attached image. */
export function createObjectDetectionTask(detector: CocoDetector): Task {
  return {
    name: 'object_detection',
    async run(input) {
      const results = [];
      for (const image of attachmentsFor('object_detection', input, ['image'], 'an image or a video')) {
        results.push({ source: image.param, ...frameTime(image), ...(await detector.detect(image.bytes, input.caller)) });
      }
      return { name: 'object_detection', result: { images: results } };
    },
  };
}
