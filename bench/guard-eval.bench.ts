// The text guard's quality on the held-out labelled set (src/guard/dataset/eval.jsonl, written
// apart from the training set): per-code precision and recall, overall recall, false-positive rate
// and F1 under <guard>ALL</guard>, and the confusion matrix. Writes bench/results/guard-eval.json.
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { TEXT_CODES } from '../src/guard/codes.ts';
import { describeThresholds, evaluate, readLabelled } from '../src/guard/text/evaluate.ts';
import { TextClassifier } from '../src/guard/text/text-classifier.ts';

const config = loadConfig(process.env);
const classifier = new TextClassifier({ ...config.guard, threads: 2, timeoutMs: 600_000 });
try {
  const labelled = readLabelled('src/guard/dataset/eval.jsonl');
  const quality = await evaluate(classifier, labelled);
  const thresholds = await classifier.thresholds();
  const { overall } = quality;
  console.log(`\n${quality.examples} held-out texts; thresholds (chosen on the threshold part of the training sets, which the fine-tuning never read): ${describeThresholds(thresholds)}\n`);
  console.log(`<guard>ALL</guard>: recall ${overall.recall}, false-positive rate ${overall.falsePositiveRate} (look-alikes alone ${quality.lookalikeFalsePositiveRate}), precision ${overall.precision}, F1 ${overall.f1}\n`);
  console.log('| code | texts | recall (<guard>CODE</guard>) | precision |\n|---|---|---|---|');
  for (const code of TEXT_CODES) {
    const q = quality.perCode[code];
    console.log(`| ${code} | ${q.support} | ${q.recall} | ${q.precision} |`);
  }
  const columns = [...TEXT_CODES, 'none'];
  console.log(`\nConfusion (rows: true code; columns: codes matched under ALL)\n\n| | ${columns.join(' | ')} |\n|${'---|'.repeat(columns.length + 1)}`);
  for (const row of [...TEXT_CODES, 'safe']) {
    console.log(`| ${row} | ${columns.map((c) => quality.confusion[row]?.[c] ?? '').join(' | ')} |`);
  }
  writeFileSync('bench/results/guard-eval.json', `${JSON.stringify({ when: new Date().toISOString(), thresholds, ...quality }, null, 2)}\n`);
} finally {
  await classifier.close();
}
