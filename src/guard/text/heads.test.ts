import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';

const HERE = new URL('.', import.meta.url).pathname;

/** Fits heads.py's network on made-up embeddings (rows of `codes`) and returns its scores on `probes`. */
function fitAndScore(points: number[][], codes: string[][], probes: number[][]): number[][] {
  const script = `
import json, sys
import numpy as np
from heads import fit_heads, scores_of
data = json.load(sys.stdin)
rows = [{"codes": c} for c in data["codes"]]
heads = fit_heads(np.array(data["points"], np.float32), rows)
print(json.dumps(scores_of(np.array(data["probes"], np.float32), heads).round(4).tolist()))`;
  const out = execFileSync(loadConfig({}).guard.python, ['-c', script], { cwd: HERE, input: JSON.stringify({ points, codes, probes }) });
  return JSON.parse(out.toString()) as number[][];
}

/** A point near `centre` in 8 dimensions (the rest zero), spread by a fixed pattern. */
const near = (centre: number[], i: number) => [...centre.map((c, d) => c + 0.05 * Math.sin(7 * i + 3 * d)), 0, 0, 0, 0, 0, 0];

describe("the guard's heads", () => {
  // Harmful in two opposite corners, safe in the other two: no plane separates them (a logistic
  // head scores every corner alike), a hidden layer does.
  it('learn a boundary that is not a plane', () => {
    const corners = [[1, 1], [-1, -1], [1, -1], [-1, 1]];
    const points = corners.flatMap((c) => Array.from({ length: 30 }, (_, i) => near(c, i)));
    const codes = corners.flatMap((_, k) => Array.from({ length: 30 }, () => (k < 2 ? ['S1'] : [])));
    const scores = fitAndScore(points, codes, corners.map((c) => near(c, 99)));
    const harmful = scores.map((s) => s[0]!);
    assert.ok(Math.min(harmful[0]!, harmful[1]!) > 0.9 && Math.max(harmful[2]!, harmful[3]!) < 0.1, JSON.stringify(harmful));
  });

  // Rows whose source names no code ("unlabelled") are harmful, but may be of any code: counted as
  // negatives of S1 where S1's own rows are, they would pull its head to about 0.6 there.
  it('let a harmful row of no named code teach the harmful head only', () => {
    const points = [
      ...Array.from({ length: 20 }, (_, i) => near([1, 0], i)),
      ...Array.from({ length: 200 }, (_, i) => near([1, 0], 100 + i)),
      ...Array.from({ length: 100 }, (_, i) => near([-1, 0], i)),
    ];
    const codes = [...Array(20).fill(['S1']), ...Array(200).fill(['unlabelled']), ...Array(100).fill([])] as string[][];
    const [atHarmful, atSafe] = fitAndScore(points, codes, [near([1, 0], 999), near([-1, 0], 999)]);
    assert.ok(atHarmful![0]! > 0.9 && atHarmful![1]! > 0.9, `harmful ${atHarmful![0]}, S1 ${atHarmful![1]}`);
    assert.ok(atSafe![0]! < 0.1 && atSafe![1]! < 0.1, `harmful ${atSafe![0]}, S1 ${atSafe![1]}`);
  });
});
