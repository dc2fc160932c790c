import type { TesseractReader } from '../ocr/tesseract-reader.ts';
import { attachmentsFor, type Task } from '../task.ts';
import { detectGuiElements } from './gui-detector.ts';

/** Buttons, inputs, text and icons, with boxes, in each attached screenshot. */
export function createGuiDetectionTask(reader: TesseractReader): Task {
  return {
    name: 'gui_detection',
    async run(input) {
      const results = [];
      for (const image of attachmentsFor('gui_detection', input, ['image'], 'a screenshot')) results.push({ source: image.param, ...(await detectGuiElements(image.bytes, reader)) });
      return { name: 'gui_detection', result: { images: results } };
    },
  };
}
