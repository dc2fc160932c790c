import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';
import { taskInput } from '../../testing/task-input.ts';
import { CocoDetector } from './coco-detector.ts';
import { createObjectDetectionTask } from './object-detection-task.ts';

// Photos from Debian's python3-skimage (scripts/install-test-photos.sh), with what is in them.
const PHOTOS: [string, string][] = [
  ['astronaut.png', 'person'],
  ['coffee.png', 'cup'],
  ['horse.png', 'horse'],
  ['chelsea.png', 'cat'],
  ['motorcycle_left.png', 'motorcycle'],
];
const detector = new CocoDetector(workerLimitsOf(loadConfig({})));
const task = createObjectDetectionTask(detector);

describe('object_detection task', () => {
  after(() => detector.close());
  it('finds the main object in at least 4 of the 5 sample photos, with boxes inside the image', async () => {
    let hits = 0;
    const seen: string[] = [];
    for (const [file, expected] of PHOTOS) {
      const bytes = readFileSync(`.cache/fixtures/photos/${file}`);
      const entry = await task.run(taskInput({ attachments: [{ kind: 'image', mime: 'image/png', bytes, param: file }] }));
      if (entry.name !== 'object_detection') return assert.fail();
      const image = entry.result.images[0]!;
      for (const o of image.objects) {
        assert.ok(o.score >= 0.3 && o.score <= 1);
        assert.ok(o.bbox.x + o.bbox.width <= image.width + 1 && o.bbox.y + o.bbox.height <= image.height + 1, JSON.stringify(o));
      }
      const labels = image.objects.map((o) => o.label);
      seen.push(`${file}: ${labels.join(', ') || '(none)'}`);
      if (labels.includes(expected)) hits++;
    }
    assert.ok(hits >= 4, `hits ${hits}/5: ${seen.join('; ')}`);
  });
});
