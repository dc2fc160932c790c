// The image guard on the Debian picture set (scripts/install-guard-images.sh): how many harmless
// pictures each image code flags, and, for S1_IMAGE, how many synthetic "gore" pictures (blood
// colours drawn over each person or animal the detector finds, src/testing/fixtures.ts) it catches.
// No sexual or gory picture exists in a registry package, so S12_IMAGE and S15_IMAGE have no recall
// here (see README). Writes bench/results/guard-images.json.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { IMAGE_CODES, type ImageCode } from '../src/guard/codes.ts';
import { ImageClassifier } from '../src/guard/image/image-classifier.ts';
import { beingRegions, imageCodeScores, matchedImageCodes } from '../src/guard/image/image-codes.ts';
import { workerLimitsOf } from '../src/wiring/create-tasks.ts';
import { CocoDetector } from '../src/tasks/object-detection/coco-detector.ts';
import { bloodied } from '../src/testing/fixtures.ts';

const DIR = '.cache/fixtures/guard-images';
const limits = workerLimitsOf(loadConfig(process.env));
const images = new ImageClassifier(limits);
const detector = new CocoDetector(limits);
const codes = [...IMAGE_CODES];
const flagged: Record<ImageCode, string[]> = { S1_IMAGE: [], S12_IMAGE: [], S15_IMAGE: [] };
const highest: Record<ImageCode, { file: string; score: number }> = Object.fromEntries(codes.map((c) => [c, { file: '', score: 0 }])) as never;
const gore = { pictures: 0, caught: 0, missed: [] as string[] };
const classifyMs: number[] = [];
try {
  const files = readdirSync(DIR).filter((f) => !f.startsWith('.')).sort();
  for (const file of files) {
    const bytes = readFileSync(`${DIR}/${file}`);
    const beings = beingRegions((await detector.detect(bytes)).objects);
    const started = performance.now();
    const scores = await images.score(bytes, beings);
    classifyMs.push(performance.now() - started);
    for (const code of matchedImageCodes(scores, codes).keys()) flagged[code].push(file);
    for (const [code, score] of Object.entries(imageCodeScores(scores)) as [ImageCode, number][]) {
      if (score > highest[code].score) highest[code] = { file, score: Number(score.toFixed(3)) };
    }
    for (const [i, being] of beings.entries()) {
      gore.pictures++;
      const synthetic = await bloodied(bytes, being);
      if (matchedImageCodes(await images.score(synthetic, beings), ['S1_IMAGE']).has('S1_IMAGE')) gore.caught++;
      else gore.missed.push(`${file}#${i}`);
    }
  }
  classifyMs.sort((a, b) => a - b);
  const result = {
    when: new Date().toISOString(),
    harmless: files.length,
    falsePositives: Object.fromEntries(codes.map((c) => [c, { count: flagged[c].length, rate: Number((flagged[c].length / files.length).toFixed(3)), pictures: flagged[c] }])),
    highestHarmlessScore: highest,
    syntheticGore: { ...gore, recall: gore.pictures ? Number((gore.caught / gore.pictures).toFixed(3)) : null },
    classifyMs: { p50: Math.round(classifyMs[Math.floor(classifyMs.length / 2)]!), p99: Math.round(classifyMs[Math.floor(classifyMs.length * 0.99)]!) },
  };
  console.log(`\n${files.length} harmless pictures from Debian packages\n\n| code | flagged | rate | highest harmless score |\n|---|---|---|---|`);
  for (const c of codes) console.log(`| ${c} | ${flagged[c].length} | ${result.falsePositives[c]!.rate} | ${highest[c].score} (${highest[c].file}) |`);
  console.log(`\nS1_IMAGE on synthetic gore (blood colours over each of ${gore.pictures} people and animals found): ${gore.caught} caught, recall ${result.syntheticGore.recall}`);
  console.log(`classifier time per picture (detector excluded): p50 ${result.classifyMs.p50} ms, p99 ${result.classifyMs.p99} ms`);
  writeFileSync('bench/results/guard-images.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await Promise.all([images.close(), detector.close()]);
}
