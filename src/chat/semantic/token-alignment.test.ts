import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PIECE_WIDTH, alignment } from './token-alignment.ts';

/** Word pieces as unit vectors along the given axes (a piece per axis). */
const pieces = (...axes: number[]) => {
  const v = new Float32Array(axes.length * PIECE_WIDTH);
  axes.forEach((axis, i) => (v[i * PIECE_WIDTH + axis] = 1));
  return v;
};

describe('the word-piece alignment', () => {
  it('is 1 for the same pieces in another order, and symmetric', () => {
    assert.equal(alignment(pieces(1, 2, 3), pieces(3, 1, 2)), 1);
    assert.equal(alignment(pieces(1, 2), pieces(1, 2, 3)), alignment(pieces(1, 2, 3), pieces(1, 2)));
  });

  it('is set by the one piece that finds no counterpart, on either side', () => {
    assert.equal(alignment(pieces(1, 2, 3), pieces(1, 2)), 0, 'a piece only in the first was not counted');
    assert.equal(alignment(pieces(1, 2), pieces(1, 2, 3)), 0, 'a piece only in the second was not counted');
    const half = pieces(1, 2); // its second piece turned halfway from axis 2 to axis 4
    half[PIECE_WIDTH + 2] = Math.SQRT1_2;
    half[PIECE_WIDTH + 4] = Math.SQRT1_2;
    assert.ok(Math.abs(alignment(half, pieces(1, 2)) - Math.SQRT1_2) < 1e-6, 'a piece partly matched');
  });

  it('is -1 when either side has no piece', () => {
    assert.equal(alignment(new Float32Array(0), pieces(1)), -1);
  });
});
