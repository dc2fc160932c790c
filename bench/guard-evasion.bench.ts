// The text guard against evasion by form (issue 23): per form, how many of CASES harmful held-out
// requests hidden in harmless held-out text of random length it catches, and how many of the same
// texts without the request (the controls) it flags. A measurement, not a test: with today's
// classifier long harmless texts are flagged too often for any form to pass a 95% bar. Also the
// classifier's own latency per text (median of sequential calls, the worker warm, a new text each
// call), for a short and a long text. Writes bench/results/guard-evasion.json.
//   BENCH_CASES (40) per form; BENCH_FORMS (all) a comma-separated list of forms.
//   BENCH_SET=tuning draws the requests and the filler from the training set instead, and writes
//   bench/results/guard-evasion-tuning.json: how the spans a text is read by were chosen, so the
//   held-out figures stay unseen until a choice is made.
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { TEXT_CODES } from '../src/guard/codes.ts';
import { readLabelled } from '../src/guard/text/evaluate.ts';
import { EVASION_FORMS, hiddenCase, seededRandom } from '../src/guard/text/evasion-forms.ts';
import { matchedTextCodes, TextClassifier } from '../src/guard/text/text-classifier.ts';
import { quantile } from './lib/http-load.ts';

const CASES = Number(process.env.BENCH_CASES ?? 40);
/** Filler up to this many words keeps a text inside the default 4,096-token context (MiniLM: about 1.3 tokens a word). */
const MAX_WORDS = 2_800;
const LATENCY_CALLS = 20;
const TUNING = process.env.BENCH_SET === 'tuning';
const SOURCE = TUNING ? 'src/guard/dataset/train.jsonl' : 'src/guard/dataset/eval.jsonl';
const RESULTS = TUNING ? 'bench/results/guard-evasion-tuning.json' : 'bench/results/guard-evasion.json';

const classifier = new TextClassifier({ ...loadConfig(process.env).guard, threads: 2, timeoutMs: 600_000 });
const flagged = async (texts: string[]) => {
  return (await classifier.score(texts)).map((reading) => matchedTextCodes(reading, TEXT_CODES).size > 0);
};
try {
  // The requests the guard flags alone, and the harmless texts it passes alone: the form is what is measured.
  const rows = readLabelled(SOURCE);
  const harmful = rows.filter((r) => r.codes.length > 0).map((r) => r.text);
  const safe = rows.filter((r) => r.codes.length === 0).map((r) => r.text);
  const [h, s] = [await flagged(harmful), await flagged(safe)];
  const requests = harmful.filter((_, i) => h[i]);
  const filler = safe.filter((_, i) => !s[i]);

  // A case whose control is flagged is caught whatever the request's own span says, so `caught`
  // is an upper bound; among the cases whose control passes, the request was found by itself.
  const forms: { form: string; caught: number; controlsFlagged: number; cases: number; caughtWhereControlPasses: number }[] = [];
  for (const [f, form] of EVASION_FORMS.entries()) {
    if (process.env.BENCH_FORMS && !process.env.BENCH_FORMS.split(',').includes(form)) continue;
    // Seeds as the former evasion test had them.
    const cases = Array.from({ length: CASES }, (_, i) => hiddenCase(form, requests, filler, 23_000 + f * 1_000 + i, MAX_WORDS));
    const [seen, controls] = [await flagged(cases.map((c) => c.text)), await flagged(cases.map((c) => c.control))];
    const count = (pick: (i: number) => boolean) => cases.filter((_, i) => pick(i)).length;
    forms.push({
      form, caught: count((i) => seen[i]!), controlsFlagged: count((i) => controls[i]!), cases: CASES,
      caughtWhereControlPasses: count((i) => seen[i]! && !controls[i]!),
    });
  }

  // Each call reads a new text of distinct sentences (harmless held-out texts in a seeded order):
  // the worker reads a window repeated within a text once, so one sentence repeated to 1,000
  // tokens cost what one sentence costs.
  const draw = seededRandom(99);
  const newText = (words: number) => {
    const out: string[] = [];
    while (out.length < words) out.push(...filler[Math.floor(draw() * filler.length)]!.split(/\s+/));
    return out.slice(0, words).join(' ');
  };
  const inputs = { '50 tokens': 38, '1,000 tokens': 750 }; // MPNet reads about 1.3 tokens a word
  const latency: { input: string; medianMs: number }[] = [];
  for (const [input, words] of Object.entries(inputs)) {
    await classifier.score([newText(words)]); // warm
    const times: number[] = [];
    for (let i = 0; i < LATENCY_CALLS; i++) {
      const text = newText(words);
      const start = performance.now();
      await classifier.score([text]);
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    latency.push({ input, medianMs: Math.round(quantile(times, 0.5)) });
  }

  console.log(`\n${requests.length} held-out requests the guard flags alone, ${filler.length} harmless texts it passes alone\n`);
  console.log('| form | requests caught | controls flagged | caught where the control passes |\n|---|---|---|---|');
  for (const r of forms) {
    console.log(`| ${r.form} | ${r.caught}/${r.cases} | ${r.controlsFlagged}/${r.cases} | ${r.caughtWhereControlPasses}/${r.cases - r.controlsFlagged} |`);
  }
  console.log(`\n| text | classifier median ms (${LATENCY_CALLS} sequential calls) |\n|---|---|`);
  for (const r of latency) console.log(`| ${r.input} | ${r.medianMs} |`);
  writeFileSync(RESULTS, `${JSON.stringify({ when: new Date().toISOString(), set: TUNING ? 'tuning' : 'held-out', requests: requests.length, filler: filler.length, forms, latency }, null, 2)}\n`);
} finally {
  await classifier.close();
}
