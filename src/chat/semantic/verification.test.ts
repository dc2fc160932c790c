import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { estimatedError, mayServe } from './verification.ts';

const right = (s: number, n = 1, entry?: string) => Array.from({ length: n }, () => ({ s, ok: true, ...(entry ? { entry } : {}) }));

describe('the semantic cache\'s bound', () => {
  it('needs 48 right verifications and none wrong in the band below s for δ = 0.02, the entry\'s own and the pool\'s together', () => {
    assert.equal(mayServe(right(0.9, 10), right(0.9, 37), 0.92, 0.02), false);
    assert.equal(mayServe(right(0.9, 10), right(0.9, 38), 0.92, 0.02), true);
    assert.equal(mayServe([], right(0.9, 48), 0.92, 0.02), true, 'a new entry waited for verifications of its own');
  });

  it('counts a wrong answer in the band against the estimate, and none above s or below the band', () => {
    const pool = [...right(0.9, 58), { s: 0.88, ok: false }];
    assert.equal(estimatedError([], pool, 0.92), 2 / 61);
    assert.equal(estimatedError([], [...right(0.9, 48), { s: 0.95, ok: false }, { s: 0.86, ok: false }], 0.92), 1 / 50);
  });

  it('reads a wider band when the narrow ones hold too few, but never past where an answer was wrong nor past 0.5 below s', () => {
    assert.equal(mayServe([], right(0.7, 48), 0.92, 0.02), true, 'the clean band [0.62, 0.92] was not read');
    assert.equal(mayServe([], [...right(0.8, 48), { s: 0.65, ok: false }], 0.92, 0.02), true, 'a wrong answer below a clean band held it back');
    assert.equal(mayServe([], [...right(0.7, 48), { s: 0.65, ok: false }], 0.92, 0.02), false, 'served over a wrong answer inside the only band that holds enough');
    assert.equal(mayServe([], right(0.4, 480), 0.92, 0.02), false, 'read observations more than 0.5 below s');
  });

  it('lets one wrong answer of the entry\'s own in the band outweigh thousands of the pool\'s right ones', () => {
    assert.equal(mayServe([], right(0.9, 4000), 0.92, 0.02), true);
    assert.equal(mayServe([{ s: 0.9, ok: false }], right(0.9, 4000), 0.92, 0.02), false);
  });

  it('follows the scope\'s traffic: its latest wrong answers are not outweighed by thousands of older right ones', () => {
    const pool = [...right(0.9, 4000), ...Array.from({ length: 5 }, () => ({ s: 0.9, ok: false }))];
    assert.equal(estimatedError([], pool, 0.92), 6 / 82);
    assert.equal(mayServe([], pool, 0.92, 0.02), false, 'served on the older traffic\'s record');
    assert.equal(mayServe([], [...pool, ...right(0.9, 80)], 0.92, 0.02), true, 'the wrong answers held it back after 80 newer right ones');
  });

  it('counts the entry\'s own verifications once, though the pool holds them too', () => {
    assert.equal(estimatedError(right(0.9, 10), [...right(0.9, 10, 'e'), ...right(0.9, 20, 'f')], 0.92, 'e'), 1 / 32);
  });

  it('serves nothing at or below a similarity where the entry was seen wrong', () => {
    const pool = right(0.9, 500);
    assert.equal(mayServe([...right(0.9), { s: 0.95, ok: false }], pool, 0.95, 0.02), false, 'served where seen wrong');
    assert.equal(mayServe([...right(0.9), { s: 0.95, ok: false }], pool, 0.93, 0.02), false, 'served below where seen wrong');
  });
});
