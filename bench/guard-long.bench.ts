// The text guard on long harmless text (issue 23: harmless requests pass): how many whole texts
// <guard>ALL</guard> blocks, by source, among the held-out long texts of the external set
// (scripts/install-guard-data.sh; kind "long" in .cache/guard-data/heldout.jsonl), which no head or
// threshold was fitted on. A long text is read span by span, so one span that passes the heads
// blocks the whole request.
//   writingbench: WritingBench's writing tasks with their materials pasted in;
//   npm: a chunk of an npm package's README (prose, code, tables, licence notices), never trained on;
//   licence: a chunk of a licence text of Debian's /usr/share/common-licenses;
//   python: a chunk of a module of Python's standard library;
//   pypi, debian-doc: chunks of the descriptions of the Python packages the guard's environment
//     installs, and of the READMEs under /usr/share/doc (first read 28 November, after the rule for
//     text dense with symbols was fixed).
// BENCH_SOURCES (writingbench,npm,licence,python,pypi,debian-doc) names the sources to run. Writes bench/results/guard-long.json.
import { writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { TEXT_CODES } from '../src/guard/codes.ts';
import { describeThresholds, readLabelled, sourceFamily } from '../src/guard/text/evaluate.ts';
import { matchedTextCodes, TextClassifier } from '../src/guard/text/text-classifier.ts';
import { projectFile } from '../src/project-files.ts';

const SOURCES = (process.env.BENCH_SOURCES ?? 'writingbench,npm,licence,python,pypi,debian-doc').split(',');
const long = readLabelled(projectFile('.cache/guard-data/heldout.jsonl')).filter((t) => t.kind === 'long');

const classifier = new TextClassifier({ ...loadConfig(process.env).guard, threads: 2, timeoutMs: 3_600_000 });
try {
  const thresholds = await classifier.thresholds();
  const results: { source: string; texts: number; blocked: number; spans: number; codes: Record<string, number> }[] = [];
  for (const source of SOURCES) {
    const texts = long.filter((t) => sourceFamily(t) === source).map((t) => t.text);
    const scores = await classifier.score(texts);
    const codes: Record<string, number> = {};
    let blocked = 0;
    for (const reading of scores) {
      const matched = [...matchedTextCodes(reading, TEXT_CODES).keys()];
      if (matched.length) blocked += 1;
      for (const code of matched) codes[code] = (codes[code] ?? 0) + 1;
    }
    results.push({ source, texts: texts.length, blocked, spans: scores.reduce((n, s) => n + s.spans.length, 0), codes });
  }
  console.log(`\nthresholds: ${describeThresholds(thresholds)}\n`);
  console.log('| held-out long harmless texts | blocked under ALL | spans read | codes matched (texts) |\n|---|---|---|---|');
  for (const r of results) console.log(`| ${r.source} | ${r.blocked}/${r.texts} | ${r.spans} | ${Object.entries(r.codes).map(([c, n]) => `${c} ${n}`).join(', ')} |`);
  writeFileSync('bench/results/guard-long.json', `${JSON.stringify({ when: new Date().toISOString(), thresholds, results }, null, 2)}\n`);
} finally {
  await classifier.close();
}
