// How far any judge built on the packaged encoders can go: the semantic cache's labelled sets as
// pairs (every two phrasings of a paraphrase group; every near-miss pair), each described by what
// the cache can compute — the candidate filter's two verdicts here, the encoders' similarities in
// bench/semantic-ceiling.py — and a logistic judge fitted on them, leaving one set out at a time.
// Pairwise, with no cold start and no other entries to confuse: an upper bound on what the
// verified cache could answer with these encoders, not a figure of the cache. Writes
// bench/results/semantic-ceiling.json.
//
// BENCH_CROSS_ENCODER=1 adds the judge that reads the two questions together, built by
// scripts/install-semantic-judge.sh (src/guard/text/train_pair_judge.py and pair_judge.py; about
// 20 minutes on two cores, kept in the build cache by the SHA-256 of every input of its training,
// so a rerun copies it): its cross-encoder's score alone and as one more feature of the logistic
// judge, its own combination as fitted there, and a judge within a miss's budget (no MPNet, the
// cross-encoder on one order) with its cost beside the embedding's. It was built into the cache on
// 28 November and taken out again (README, "The semantic layer").
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HELD, loadSets, pairsOf } from './lib/semantic-sets.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const PYTHON = `${ROOT}.venv-guard/bin/python`;
const CROSS_ENCODER = process.env.BENCH_CROSS_ENCODER === '1';
const { tune, held } = loadSets(true);

const dir = mkdtempSync(join(tmpdir(), 'semantic-ceiling-'));
try {
  const file = join(dir, 'pairs.json');
  writeFileSync(file, JSON.stringify([...pairsOf('tuning', tune), ...HELD.flatMap((h) => pairsOf(h, held[h]))]));
  if (CROSS_ENCODER) execFileSync(`${ROOT}scripts/install-semantic-judge.sh`, { stdio: 'inherit' });
  const judge = CROSS_ENCODER ? [`${ROOT}.cache/semantic-judge`] : [];
  execFileSync(PYTHON, [`${ROOT}bench/semantic-ceiling.py`, file, `${ROOT}bench/results/semantic-ceiling.json`, ...judge], { stdio: 'inherit' });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
