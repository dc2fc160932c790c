// How far any judge built on the packaged encoders can go: the semantic cache's labelled sets as
// pairs (every two phrasings of a paraphrase group; every near-miss pair), each described by what
// the cache can compute — the candidate filter's two verdicts here, the encoders' similarities in
// bench/semantic-ceiling.py — and a logistic judge fitted on them, leaving one set out at a time.
// Pairwise, with no cold start and no other entries to confuse: an upper bound on what the
// verified cache could answer with these encoders, not a figure of the cache. Writes
// bench/results/semantic-ceiling.json.
//
// BENCH_CROSS_ENCODER=1 adds a judge that reads the two questions together, trained here
// (bench/semantic-cross-encoder.py; about 25 minutes on two cores, its scores kept in the build
// cache by the SHA-256 of every input, so a rerun reads them): its score alone, and as one more
// feature of the logistic judge.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedTerms, wordPrints, wordsApart } from '../src/chat/semantic/candidate-filter.ts';
import { HELD, loadSets, type Part } from './lib/semantic-sets.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const PYTHON = `${ROOT}.venv-guard/bin/python`;
const CROSS_ENCODER = process.env.BENCH_CROSS_ENCODER === '1';
const { tune, held } = loadSets(true);

const pairsOf = (set: string, part: Part) => [
  ...part.groups.flatMap((g) => g.flatMap((a, i) => g.slice(i + 1).map((b) => ({ set, a, b, paraphrase: true })))),
  ...part.pairs.map(([a, b]) => ({ set, a, b, paraphrase: false })),
].map((p) => ({ ...p, sameFixedTerms: fixedTerms(p.a) === fixedTerms(p.b), wordsApart: wordsApart(wordPrints(p.a), wordPrints(p.b)) }));

const dir = mkdtempSync(join(tmpdir(), 'semantic-ceiling-'));
try {
  const file = join(dir, 'pairs.json');
  writeFileSync(file, JSON.stringify([...pairsOf('tuning', tune), ...HELD.flatMap((h) => pairsOf(h, held[h]))]));
  const scores = CROSS_ENCODER ? [crossEncoderScores(file, dir)] : [];
  execFileSync(PYTHON, [`${ROOT}bench/semantic-ceiling.py`, file, `${ROOT}bench/results/semantic-ceiling.json`, ...scores], { stdio: 'inherit' });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** The cross-encoder's scores of the pairs in `file`: from the build cache, or trained now and kept there. */
function crossEncoderScores(file: string, dir: string): string {
  execFileSync(`${ROOT}scripts/fetch-cross-encoder-inputs.sh`, { stdio: 'inherit' });
  const inputs = join(ROOT, '.cache/cross-encoder');
  const key = createHash('sha256');
  for (const input of [file, `${ROOT}bench/semantic-cross-encoder.py`, `${inputs}/minilm/model.safetensors`, `${inputs}/semanticmemo/data/training/pairs_v2.train.jsonl`]) {
    key.update(readFileSync(input));
  }
  const cacheDir = process.env.SERVICE_BUILD_CACHE ?? join(homedir(), '.cache/chat-completion-service');
  const cached = join(cacheDir, `cross-encoder-scores-${key.digest('hex').slice(0, 32)}.json`);
  if (existsSync(cached)) {
    console.log(`the cross-encoder's scores for these inputs are in ${cached}: read, not trained again`);
    return cached;
  }
  const fresh = join(dir, 'cross-encoder.json');
  execFileSync(PYTHON, [`${ROOT}bench/semantic-cross-encoder.py`, file, `${inputs}/minilm`, `${inputs}/semanticmemo`, fresh], { stdio: 'inherit' });
  mkdirSync(cacheDir, { recursive: true });
  copyFileSync(fresh, `${cached}.partial`);
  renameSync(`${cached}.partial`, cached);
  return cached;
}
