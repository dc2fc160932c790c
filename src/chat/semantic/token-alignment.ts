import { similarity } from './embedder.ts';

/** The width of a word piece's vector (MiniLM's). */
export const PIECE_WIDTH = 384;

/**
 * How well two questions' word pieces align: every piece of each finds its nearest piece in the
 * other (cosine of their contextual vectors, unit length, PIECE_WIDTH numbers each, end to end),
 * and the score is the worst of those, so one word with no counterpart ("extended warranty"
 * against "warranty") sets it however alike the rest is; a paraphrase's words all find theirs
 * ("capital" and "city" in "Which city is France's capital?"). On the benchmark's tuning parts,
 * among pairs that pass the candidate filter and are at least 0.5 alike by the sentence vectors,
 * 78% of the paraphrase pairs are above every near miss by this score, 62% by the sentence
 * vectors' cosine. Symmetric; 1 for a text with itself; -1 when either has no piece.
 */
export function alignment(a: Float32Array, b: Float32Array): number {
  const { rows, cols } = bestMatches(a, b);
  if (rows.length === 0 || cols.length === 0) return -1;
  return Math.min(...rows, ...cols);
}

/** Each piece's best cosine in the other text: `rows` for a's pieces, `cols` for b's. */
export function bestMatches(a: Float32Array, b: Float32Array): { rows: number[]; cols: number[] } {
  const rowPieces = piecesOf(a);
  const colPieces = piecesOf(b);
  const rows = rowPieces.map(() => -1);
  const cols = colPieces.map(() => -1);
  rowPieces.forEach((row, i) => colPieces.forEach((col, j) => {
    const s = similarity(row, col);
    rows[i] = Math.max(rows[i]!, s);
    cols[j] = Math.max(cols[j]!, s);
  }));
  return { rows, cols };
}

/** Each piece's vector, as a view of the end-to-end array (no copy). */
const piecesOf = (pieces: Float32Array) =>
  Array.from({ length: Math.floor(pieces.length / PIECE_WIDTH) }, (_, i) => pieces.subarray(i * PIECE_WIDTH, (i + 1) * PIECE_WIDTH));
