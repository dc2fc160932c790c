// The evasion forms of the guard's threshold part, for the heads' fit to judge (Makefile,
// GUARD_FORMS; src/guard/text/threshold-forms.ts): node --import tsx scripts/guard-forms.ts OUT JSONL...
import { writeFileSync } from 'node:fs';
import { readLabelled } from '../src/guard/text/evaluate.ts';
import { thresholdForms } from '../src/guard/text/threshold-forms.ts';

const CASES = 40; // per form, as the held-out evasion bench
const MAX_WORDS = 300; // several windows of filler, without tripling the fit's time

const [out, ...sets] = process.argv.slice(2);
if (!out || sets.length === 0) {
  console.error('usage: scripts/guard-forms.ts OUT JSONL...');
  process.exit(2);
}
const rows = thresholdForms(sets.flatMap(readLabelled), CASES, MAX_WORDS);
writeFileSync(out, rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
console.log(`${rows.length} form texts and controls from the threshold part of ${sets.join(', ')} -> ${out}`);
