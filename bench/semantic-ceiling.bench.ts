// How far any judge built on the packaged encoders can go: the semantic cache's labelled sets as
// pairs (every two phrasings of a paraphrase group; every near-miss pair), each described by what
// the cache can compute — the candidate filter's two verdicts here, the encoders' similarities in
// bench/semantic-ceiling.py — and a logistic judge fitted on them, leaving one set out at a time.
// Pairwise, with no cold start and no other entries to confuse: an upper bound on what the
// verified cache could answer with these encoders, not a figure of the cache. Writes
// bench/results/semantic-ceiling.json.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedTerms, wordPrints, wordsApart } from '../src/chat/semantic/candidate-filter.ts';
import { HELD, loadSets, type Part } from './lib/semantic-sets.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const { tune, held } = loadSets(true);

const pairsOf = (set: string, part: Part) => [
  ...part.groups.flatMap((g) => g.flatMap((a, i) => g.slice(i + 1).map((b) => ({ set, a, b, paraphrase: true })))),
  ...part.pairs.map(([a, b]) => ({ set, a, b, paraphrase: false })),
].map((p) => ({ ...p, sameFixedTerms: fixedTerms(p.a) === fixedTerms(p.b), wordsApart: wordsApart(wordPrints(p.a), wordPrints(p.b)) }));

const dir = mkdtempSync(join(tmpdir(), 'semantic-ceiling-'));
try {
  const file = join(dir, 'pairs.json');
  writeFileSync(file, JSON.stringify([...pairsOf('tuning', tune), ...HELD.flatMap((h) => pairsOf(h, held[h]))]));
  execFileSync(`${ROOT}.venv-guard/bin/python`, [`${ROOT}bench/semantic-ceiling.py`, file, `${ROOT}bench/results/semantic-ceiling.json`], { stdio: 'inherit' });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
