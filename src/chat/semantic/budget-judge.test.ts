import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { BUDGET_FEATURES, loadBudgetJudge, logitOf, pairFeatures, probabilityOf } from './budget-judge.ts';
import { MiniLmEmbedder } from './embedder.ts';
import { PIECE_WIDTH } from './token-alignment.ts';

const python = fileURLToPath(new URL('../../../.venv-guard/bin/python', import.meta.url));
const guardText = fileURLToPath(new URL('../../guard/text/', import.meta.url));

/** Word pieces as unit vectors along the given axes (a piece per axis). */
const pieces = (...axes: number[]) => {
  const v = new Float32Array(axes.length * PIECE_WIDTH);
  axes.forEach((axis, i) => (v[i * PIECE_WIDTH + axis] = 1));
  return v;
};
const unit = (axis: number) => pieces(axis);

describe('the budget judge\'s features', () => {
  it('reads the best matches of both texts, apart for the shorter and the longer, and the filter\'s verdicts', () => {
    // The cached text's pieces on axes 1, 2, 3; the prompt's on 1, 2: the third piece finds nothing.
    const features = pairFeatures({ text: 'capital of France', vector: unit(1), pieces: pieces(1, 2, 3) }, { text: 'capital of Germany', vector: unit(1), pieces: pieces(1, 2) });
    assert.deepEqual(features, [
      1, // cosine
      0, 1, 0.8, // the worst two and the mean of [1, 1, 0] and [1, 1]
      1, 1, 0, // the shorter (the prompt): worst, mean, pieces under 0.6
      0, 2 / 3, 1, // the longer
      1, // one piece more
      0, // "France" and "Germany": other fixed terms
      1, // one content word swapped: a few words apart
    ]);
    assert.equal(features!.length, BUDGET_FEATURES.length - 1);
  });

  it('gives no features when either text has no word piece', () => {
    assert.equal(pairFeatures({ text: '', vector: unit(1), pieces: new Float32Array(0) }, { text: 'a', vector: unit(1), pieces: pieces(1) }), undefined);
  });

  it('combines standardised features into a logit, and the logit into a probability', () => {
    const judge = { features: BUDGET_FEATURES, mean: BUDGET_FEATURES.map(() => 1), sd: BUDGET_FEATURES.map(() => 2), weights: BUDGET_FEATURES.map((_, i) => i), intercept: -1 };
    const x = BUDGET_FEATURES.map(() => 3); // every feature one sd above its mean
    assert.equal(logitOf(judge, x), -1 + BUDGET_FEATURES.reduce((sum, _, i) => sum + i, 0));
    assert.equal(logitOf(judge, x.slice(0, 2)), -1 + 1, 'a ranking on the first features alone reads only those');
    assert.equal(probabilityOf(0), 0.5);
  });
});

describe('the budget judge\'s combination file', () => {
  it('refuses a missing judge, naming how to build it, and one fitted on other features', () => {
    const dir = mkdtempSync(join(tmpdir(), 'judge-'));
    assert.throws(() => loadBudgetJudge(dir), /make semantic-judge/);
    writeFileSync(join(dir, 'budget.json'), JSON.stringify({ features: BUDGET_FEATURES.slice(1), mean: [], sd: [], weights: [], intercept: 0 }));
    assert.throws(() => loadBudgetJudge(dir), /other features/);
    writeFileSync(join(dir, 'budget.json'), JSON.stringify({ features: BUDGET_FEATURES, mean: [0], sd: [1], weights: [2], intercept: 3 }));
    assert.equal(loadBudgetJudge(dir).intercept, 3);
  });
});

describe('the budget judge\'s features, as the setup fitted them (pair_judge.py budget_features)', () => {
  const embedder = new MiniLmEmbedder({ python, threads: 1, timeoutMs: 120_000, maxQueued: 10, perCaller: 10 });
  after(() => embedder.close());

  it('are the same numbers in the cache as in the fit, on real readings', async () => {
    const pairs = [
      ['What is the capital of France?', 'Which city is France\'s capital?'],
      ['Convert 5 km to miles', 'How many miles is 5 km?'],
      ['Does my laptop have a warranty?', 'Does my laptop have an extended warranty?'],
    ];
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(guardText)})
from minilm import MiniLm
from pair_judge import budget_features
m = MiniLm(1)
rows = []
for a, b in json.loads(sys.stdin.read()):
    (va, pa), (vb, pb) = [(v[0], p[0]) for v, p in (m.read_questions([a]), m.read_questions([b]))]
    rows.append([float(x) for x in budget_features(va, pa, vb, pb, 0, 0)])
print(json.dumps(rows))`;
    const fitted = JSON.parse(execFileSync(python, ['-c', script], { input: JSON.stringify(pairs), encoding: 'utf8' })) as number[][];
    for (const [i, [a, b]] of pairs.entries()) {
      const [ra, rb] = [await embedder.embed(a!), await embedder.embed(b!)];
      // The encoder's features; the filter's two verdicts are candidate-filter.ts's in both (the fit is given them).
      const served = pairFeatures({ text: a!, ...ra }, { text: b!, ...rb })!.slice(0, -2);
      const expected = fitted[i]!.slice(0, -2);
      assert.equal(served.length, 11);
      served.forEach((x, k) => assert.ok(Math.abs(x - expected[k]!) < 1e-4, `${BUDGET_FEATURES[k]} of "${a}" / "${b}": ${x} in the cache, ${expected[k]} in the fit`));
    }
  });
});
