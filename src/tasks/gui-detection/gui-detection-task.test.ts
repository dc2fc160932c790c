import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loginScreenshot } from '../../testing/fixtures.ts';
import { taskInput } from '../../testing/task-input.ts';
import { TesseractReader } from '../ocr/tesseract-reader.ts';
import { createGuiDetectionTask } from './gui-detection-task.ts';
import { GuiDetector } from './gui-detector.ts';
import { loadConfig } from '../../config.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';

type Box = { x: number; y: number; width: number; height: number };
const iou = (a: Box, b: Box) => {
  const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
  const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
  const inter = w > 0 && h > 0 ? w * h : 0;
  return inter / (a.width * a.height + b.width * b.height - inter);
};

const centreInside = (a: Box, b: Box) =>
  a.x + a.width / 2 >= b.x && a.x + a.width / 2 <= b.x + b.width && a.y + a.height / 2 >= b.y && a.y + a.height / 2 <= b.y + b.height;

describe('gui_detection task', () => {
  const config = loadConfig({});
  const reader = new TesseractReader(workerLimitsOf(config));
  const detector = new GuiDetector(reader, workerLimitsOf(config));
  after(() => Promise.all([detector.close(), reader.close()]));

  it('finds the buttons, inputs, text and icons of a drawn login screen', async () => {
    const { png, elements: drawn } = await loginScreenshot();
    const entry = await createGuiDetectionTask(detector).run(taskInput({ attachments: [{ kind: 'image', mime: 'image/png', bytes: png, param: 'login.png' }] }));
    if (entry.name !== 'gui_detection') return assert.fail();
    const found = entry.result.images[0]!.elements;
    // Widgets match by overlap (IoU ≥ 0.5); a text matches by its words and a box centred in the drawn line.
    const same = (f: (typeof found)[number], d: (typeof drawn)[number]) => f.type === d.type && (d.type === 'text'
      ? f.text === d.text && centreInside(f.bbox, d.bbox)
      : iou(f.bbox, d.bbox) >= 0.5);
    const matched = drawn.filter((d) => found.some((f) => same(f, d)));
    const correct = found.filter((f) => drawn.some((d) => same(f, d)));
    const recall = matched.length / drawn.length;
    const precision = correct.length / found.length;
    const report = JSON.stringify(found.map((f) => [f.type, f.text, Object.values(f.bbox).map(Math.round)]));
    assert.ok(recall >= 6 / 7 && precision >= 0.8, `recall ${recall}, precision ${precision}: ${report}`);
    assert.equal(found.find((f) => f.type === 'button')?.text, 'Submit', report);
  });
});
