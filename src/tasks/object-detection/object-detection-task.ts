import { invalidRequest } from '../../http/errors.ts';
import type { Task } from '../task.ts';
import type { CocoDetector } from './coco-detector.ts';

/** Labels, scores and boxes of common (COCO) objects in each attached image. */
export function createObjectDetectionTask(detector: CocoDetector): Task {
  return {
    name: 'object_detection',
    async run(input) {
      const images = input.attachments.filter((a) => a.kind === 'image');
      if (images.length === 0) throw invalidRequest('The object_detection task needs an image in the user message.', 'invalid_request', 'messages');
      const results = [];
      for (const image of images) results.push({ source: image.param, ...(await detector.detect(image.bytes)) });
      return { name: 'object_detection', result: { images: results } };
    },
  };
}
