import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { loadConfig } from '../../config.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';
import { CocoDetector } from '../../tasks/object-detection/coco-detector.ts';
import { createObjectDetectionTask } from '../../tasks/object-detection/object-detection-task.ts';
import { TaskRegistry } from '../../tasks/registry.ts';
import { bloodied, dataUrl, spokenVideo } from '../../testing/fixtures.ts';
import { testAttachmentLimits } from '../../testing/attachment-limits.ts';
import { startTestServer, TEST_KEY, type TestServer } from '../../testing/test-server.ts';
import { IMAGE_CODES } from '../codes.ts';
import { Guard, type TextScorer } from '../guard.ts';
import { ImageClassifier } from './image-classifier.ts';
import { beingRegions, matchedImageCodes } from './image-codes.ts';

// Photos from Debian (scripts/install-test-photos.sh): people, animals, objects, a red retina scan, a landscape.
const PHOTOS = ['astronaut.png', 'coffee.png', 'horse.png', 'chelsea.png', 'motorcycle_left.png', 'retina.jpg', 'rocket.jpg', 'Dune.jpg'];
const photo = (file: string) => readFileSync(`.cache/fixtures/photos/${file}`);
/** A coffee cup that nsfwjs's model calls "Porn": an adversarial example (scripts/make-nsfw-fixture.ts). */
const classifierSaysNsfw = readFileSync(new URL('./fixtures/classifier-says-nsfw.png', import.meta.url));

const limits = workerLimitsOf(loadConfig({}));
const images = new ImageClassifier(limits);
const detector = new CocoDetector(limits);
const beingsIn = async (image: Buffer) => beingRegions((await detector.detect(image)).objects);
const matched = async (image: Buffer) => [...matchedImageCodes(await images.score(image, await beingsIn(image)), [...IMAGE_CODES]).keys()];

describe('the image classifier (nsfwjs, and blood on a person or animal)', () => {
  after(() => Promise.all([images.close(), detector.close()]));

  it('matches no image code on the sample photos, the red retina scan and the landscape included', async () => {
    const found = await Promise.all(PHOTOS.map(async (file) => [file, await matched(photo(file))] as const));
    assert.deepEqual(found.filter(([, codes]) => codes.length > 0), []);
  });

  it('matches S1_IMAGE when blood covers a person, not when it covers a thing', async () => {
    const astronaut = photo('astronaut.png');
    const [person] = await beingsIn(astronaut);
    assert.ok(person, 'the detector finds the astronaut');
    assert.deepEqual(await matched(await bloodied(astronaut, person)), ['S1_IMAGE']);
    const coffee = photo('coffee.png');
    assert.deepEqual(await beingsIn(coffee), []);
    assert.deepEqual(await matched(await bloodied(coffee, { x: 0, y: 0, width: 400, height: 400 })), []);
  });

  it('matches S12_IMAGE and S15_IMAGE on a picture the model scores as sexual', async () => {
    assert.deepEqual(await matched(classifierSaysNsfw), ['S12_IMAGE', 'S15_IMAGE']);
  });
});

/** The text classifier is not under test here: only image codes are asked for, so it must not be called. */
const unusedText: TextScorer = {
  score: () => assert.fail('the text classifier was called for image codes'),
};

describe('image codes through HTTP, with the official openai SDK', () => {
  let server: TestServer;
  let client: OpenAI;
  const guardImages = new ImageClassifier(limits);
  const guardDetector = new CocoDetector(limits);
  before(async () => {
    server = await startTestServer({
      guard: new Guard(unusedText, guardImages),
      tasks: new TaskRegistry([createObjectDetectionTask(guardDetector)]),
      bodyLimitBytes: 8 * 1024 * 1024,
      attachmentLimits: testAttachmentLimits({ inlineMaxBytes: 8 * 1024 * 1024 }),
    });
    client = new OpenAI({ baseURL: server.baseUrl, apiKey: TEST_KEY });
  });
  after(() => Promise.all([server.close(), guardImages.close(), guardDetector.close()]));

  const ask = (codes: string, image: Buffer, mime = 'image/png') => ({
    model: 'service',
    messages: [
      { role: 'system' as const, content: `<guard>${codes}</guard>` },
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'What is in this picture?' }, { type: 'image_url' as const, image_url: { url: dataUrl(mime, image) } }] },
    ],
  });

  it('blocks a picture the classifier scores as sexual under S12_IMAGE, and answers a landscape', async () => {
    const blocked = await client.chat.completions.create(ask('S12_IMAGE', classifierSaysNsfw));
    assert.equal(blocked.choices[0]!.message.content, 'unsafe S12_IMAGE');
    assert.equal(blocked.choices[0]!.finish_reason, 'stop');
    const landscape = await client.chat.completions.create(ask('S12_IMAGE', photo('Dune.jpg'), 'image/jpeg'));
    assert.match(landscape.choices[0]!.message.content ?? '', /What is in this picture\?/); // the echo engine answered
  });

  it('blocks a person covered in blood under S1_IMAGE, streamed, and lists the picture in the verdict', async () => {
    const astronaut = photo('astronaut.png');
    const [person] = beingRegions((await guardDetector.detect(astronaut)).objects);
    const stream = await client.chat.completions.create({ ...ask('S1_IMAGE', await bloodied(astronaut, person!)), stream: true });
    let content = '';
    for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
    assert.equal(content, 'unsafe S1_IMAGE');
    const clean = await client.chat.completions.create(ask('S1_IMAGE,S12_IMAGE,S15_IMAGE', astronaut));
    const verdict = (clean as unknown as { precontext: { name: string; result: { safe: boolean; checked: string[]; codes_unavailable: string[] } }[] })
      .precontext.find((e) => e.name === 'guardrails')!.result;
    assert.deepEqual({ safe: verdict.safe, checked: verdict.checked, unavailable: verdict.codes_unavailable },
      { safe: true, checked: ['messages[1].content[1]'], unavailable: [] });
  });

  it('checks each frame of a video for the image codes, each named by its time', async () => {
    const video = await spokenVideo('', ['FIRST SLIDE', 'SECOND SLIDE'], 'webm');
    const clean = await client.chat.completions.create({
      model: 'service',
      messages: [
        { role: 'system', content: '<guard>S1_IMAGE,S12_IMAGE</guard>' },
        { role: 'user', content: [{ type: 'text', text: 'What is shown?' }, { type: 'file', file: { filename: 'slides.webm', file_data: dataUrl('video/webm', video) } }] },
      ],
    });
    const verdict = (clean as unknown as { precontext: { name: string; result: { safe: boolean; checked: string[] } }[] })
      .precontext.find((e) => e.name === 'guardrails')!.result;
    assert.equal(verdict.safe, true);
    assert.ok(verdict.checked.length === 2 && verdict.checked.every((c) => /^messages\[1\]\.content\[1\]#t=\d+(\.\d+)?$/.test(c)), verdict.checked.join());
  });
});
