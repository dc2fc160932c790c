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
  const rows = a.length / PIECE_WIDTH;
  const cols = b.length / PIECE_WIDTH;
  if (rows === 0 || cols === 0) return -1;
  const rowBest = new Float64Array(rows).fill(-1);
  const colBest = new Float64Array(cols).fill(-1);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      let dot = 0;
      for (let k = 0, x = i * PIECE_WIDTH, y = j * PIECE_WIDTH; k < PIECE_WIDTH; k++) dot += a[x + k]! * b[y + k]!;
      if (dot > rowBest[i]!) rowBest[i] = dot;
      if (dot > colBest[j]!) colBest[j] = dot;
    }
  }
  return Math.min(Math.min(...rowBest), Math.min(...colBest));
}
