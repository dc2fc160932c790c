import { readFileSync } from 'node:fs';
import { similarity } from './embedder.ts';
import { fixedTerms, wordPrints, wordsApart } from './candidate-filter.ts';
import { bestMatches } from './token-alignment.ts';

/**
 * The budget judge's features, in its combination's order (pair_judge.py BUDGET_FEATURES, which
 * the setup fits them under): what a miss can afford to read of two questions. All but the last
 * come from the cache's own encoder (pairFeatures); the last is the cross-encoder's logit, both
 * questions read together, the cached one first.
 */
export const BUDGET_FEATURES = ['cosine', 'alignment worst', 'alignment second worst', 'alignment mean', 'shorter: worst', 'shorter: mean',
  'shorter: pieces under 0.6', 'longer: worst', 'longer: mean', 'longer: pieces under 0.6',
  'pieces more in the longer', 'same fixed terms', 'words apart', 'cross-encoder, one order'];

/** A logistic judge as pair_judge.py fits it: standardised features, weights, an intercept. */
export interface Combination { features: string[]; mean: number[]; sd: number[]; weights: number[]; intercept: number; }

/** A question as the judge reads it: its text and the cache encoder's reading of it. */
export interface Question { text: string; vector: Float32Array; pieces: Float32Array; }

/** The combination the setup fitted (`JUDGE_DIR/budget.json`); refused if it was fitted on other features. */
export function loadBudgetJudge(judgeDir: string): Combination {
  let text: string;
  try {
    text = readFileSync(`${judgeDir}/budget.json`, 'utf8');
  } catch {
    throw new Error(`CACHE_JUDGE=budget needs the judge, which is not built in ${judgeDir}: run make semantic-judge (about 20 minutes the first time)`);
  }
  const combination = JSON.parse(text) as Combination;
  if (JSON.stringify(combination.features) !== JSON.stringify(BUDGET_FEATURES)) {
    throw new Error(`${judgeDir}/budget.json was fitted on other features than this code reads: run the setup again (make semantic-judge)`);
  }
  return combination;
}

/**
 * Every feature of the pair (`cached`, `prompt`) but the cross-encoder's, as pair_judge.py's
 * budget_features computes them: the sentence cosine; each word piece's best match in the other
 * text, the worst two and the mean over both, and apart for the shorter and the longer text; the
 * length difference in pieces; and the candidate filter's two verdicts (1 or 0). Undefined when
 * either has no word piece.
 */
export function pairFeatures(cached: Question, prompt: Question): number[] | undefined {
  const { rows, cols } = bestMatches(cached.pieces, prompt.pieces);
  if (rows.length === 0 || cols.length === 0) return undefined;
  const [shorter, longer] = rows.length <= cols.length ? [rows, cols] : [cols, rows];
  const both = [...rows, ...cols].sort((a, b) => a - b);
  const under = (values: number[]) => values.filter((v) => v < 0.6).length;
  return [
    similarity(cached.vector, prompt.vector), both[0]!, both[Math.min(1, both.length - 1)]!, mean(both),
    Math.min(...shorter), mean(shorter), under(shorter), Math.min(...longer), mean(longer), under(longer),
    longer.length - shorter.length,
    fixedTerms(cached.text) === fixedTerms(prompt.text) ? 1 : 0,
    wordsApart(wordPrints(cached.text), wordPrints(prompt.text)) ? 1 : 0,
  ];
}

/** The judge's logit over the first `features.length` features (without the cross-encoder's, a ranking of candidates alone). */
export function logitOf(combination: Combination, features: number[]): number {
  return features.reduce((sum, x, i) => sum + ((x - combination.mean[i]!) / combination.sd[i]!) * combination.weights[i]!, combination.intercept);
}

/** The probability the judge gives that two questions want the same answer: the cache's similarity s. */
export const probabilityOf = (logit: number) => 1 / (1 + Math.exp(-logit));

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
