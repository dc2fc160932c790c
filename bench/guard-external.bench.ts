// The text guard on labelled prompts nobody on this team wrote (scripts/install-guard-data.sh:
// Do-Not-Answer, HarmBench, AdvBench, FreshQA and guardmeter's sample, from PyPI wheels). Only the
// held-out part is reported here; the calibration part is the one thresholds may be tuned on.
// Writes bench/results/guard-external.json.
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { TEXT_CODES } from '../src/guard/codes.ts';
import { describeThresholds, evaluate, readLabelled } from '../src/guard/text/evaluate.ts';
import { matchedTextCodes, TextClassifier } from '../src/guard/text/text-classifier.ts';

/** A row of the external set: its source besides the labelled text ("unlabelled" harmful rows have no code). */

const config = loadConfig(process.env);
const classifier = new TextClassifier({ ...config.guard, threads: 2, timeoutMs: 600_000 });
try {
  // Long texts (WritingBench's writing tasks) are measured whole, span by span, by bench/guard-long.bench.ts.
  const heldout = readLabelled('.cache/guard-data/heldout.jsonl').filter((t) => t.kind !== 'long');
  const quality = await evaluate(classifier, heldout);
  const thresholds = await classifier.thresholds();
  // Per source: how many of its texts <guard>ALL</guard> blocks (harmful sources: recall; safe ones: false positives).
  const scores = await classifier.score(heldout.map((t) => t.text));
  const bySource: Record<string, { blocked: number; texts: number }> = {};
  heldout.forEach((t, i) => {
    const entry = (bySource[`${t.source} (${t.codes.length ? 'harmful' : 'safe'})`] ??= { blocked: 0, texts: 0 });
    entry.texts += 1;
    if (matchedTextCodes(scores[i]!, TEXT_CODES).size > 0) entry.blocked += 1;
  });
  const { overall } = quality;
  console.log(`\n${quality.examples} held-out external texts; thresholds (chosen on the threshold part of src/guard/dataset/train.jsonl and the external calibration set, which the fine-tuning never read; no held-out text seen): ${describeThresholds(thresholds)}\n`);
  console.log(`<guard>ALL</guard>: recall ${overall.recall}, false-positive rate ${overall.falsePositiveRate} (look-alikes alone ${quality.lookalikeFalsePositiveRate}), precision ${overall.precision}, F1 ${overall.f1}\n`);
  console.log('| code | texts | recall (<guard>CODE</guard>) |\n|---|---|---|');
  for (const code of TEXT_CODES) {
    const q = quality.perCode[code];
    if (q.support > 0) console.log(`| ${code} | ${q.support} | ${q.recall} |`);
  }
  console.log('\n| source | blocked under ALL |\n|---|---|');
  for (const [source, { blocked, texts }] of Object.entries(bySource).sort()) console.log(`| ${source} | ${blocked}/${texts} |`);
  writeFileSync('bench/results/guard-external.json', `${JSON.stringify({ when: new Date().toISOString(), thresholds, bySource, ...quality }, null, 2)}\n`);
} finally {
  await classifier.close();
}
