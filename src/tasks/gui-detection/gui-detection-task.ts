import { attachmentsFor, frameTime, type Task } from '../task.ts';
import type { GuiDetector } from './gui-detector.ts';

/** Buttons, inputs, text and icons, with boxes, in each attached screenshot. */
export function createGuiDetectionTask(detector: GuiDetector): Task {
  return {
    name: 'gui_detection',
    async run(input) {
      const results = [];
      for (const image of attachmentsFor('gui_detection', input, ['image'], 'a screenshot or a screen recording')) {
        results.push({ source: image.param, ...frameTime(image), ...(await detector.detect(image.bytes, input.caller)) });
      }
      return { name: 'gui_detection', result: { images: results } };
    },
  };
}
