import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimatedError, mayServe } from './verification.ts';

const right = (s: number, n = 1) => Array.from({ length: n }, () => ({ s, ok: true }));

describe('the semantic cache\'s bound', () => {
  it('needs 48 right verifications and none wrong in the band below s for δ = 0.02', () => {
    assert.equal(mayServe(right(0.9), right(0.9, 47), 0.92, 0.02), false);
    assert.equal(mayServe(right(0.9), right(0.9, 48), 0.92, 0.02), true);
  });

  it('counts a wrong answer in the band against the estimate, and none above s or below the band', () => {
    const pool = [...right(0.9, 98), { s: 0.85, ok: false }];
    assert.equal(estimatedError(pool, 0.92), 2 / 101);
    assert.equal(estimatedError([...right(0.9, 48), { s: 0.95, ok: false }, { s: 0.7, ok: false }], 0.92), 1 / 50);
  });

  it('serves nothing further out than the entry was checked, nor where it was seen wrong', () => {
    const pool = right(0.9, 500);
    assert.equal(mayServe([], pool, 0.95, 0.02), false, 'a cold entry served');
    assert.equal(mayServe(right(0.93), pool, 0.92, 0.02), false, 'served below the lowest checked similarity');
    assert.equal(mayServe([...right(0.9), { s: 0.95, ok: false }], pool, 0.95, 0.02), false, 'served where seen wrong');
  });
});
