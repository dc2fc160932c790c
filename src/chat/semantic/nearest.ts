import type { SemanticEntry, Store } from '../../store/store.ts';
import { type Combination, logitOf, pairFeatures, probabilityOf } from './budget-judge.ts';
import { decodeVector, type Embedder, type Reading, similarity } from './embedder.ts';
import { alignment } from './token-alignment.ts';

/** The entries nearest by sentence vector that the judge then reads. */
const JUDGED = 3;

/** The prompt's last turn as the lookup has read it. */
export interface Prompt { text: string; reading: Reading; caller: string; }

/** The entry that means most nearly what the prompt does, and how nearly (s); undefined: no entry could be judged, a miss. */
export type NearestOf = (prompt: Prompt, entries: SemanticEntry[]) => Promise<{ entry: SemanticEntry; s: number } | undefined>;

/** Where an entry's word pieces are kept, beside the cache: read only for the few nearest. */
export const piecesKey = (entryId: string) => `semantic-pieces:${entryId}`;

/**
 * The word-piece alignment (the default judge): the JUDGED nearest by sentence vector, scored by
 * how well their word pieces align with the prompt's (token-alignment.ts).
 */
export function alignedNearest(store: Store): NearestOf {
  return async (prompt, entries) => {
    let best: { entry: SemanticEntry; s: number } | undefined;
    for (const { entry, pieces } of await nearestByVector(prompt.reading, entries, store)) {
      const s = alignment(prompt.reading.pieces, pieces);
      if (!best || s > best.s) best = { entry, s };
    }
    return best;
  };
}

/**
 * The budget judge (CACHE_JUDGE=budget, budget-judge.ts): of the JUDGED nearest by sentence
 * vector, the one its encoder features rank first is read with the prompt by the cross-encoder
 * (one pair, one order: about one more embedding), and s is the probability the whole
 * combination gives. A failing cross-encoder rejects, as a failing encoder does: a miss.
 */
export function budgetNearest(store: Store, embedder: Embedder, judge: Combination): NearestOf {
  return async (prompt, entries) => {
    let best: { entry: SemanticEntry; features: number[]; rank: number } | undefined;
    for (const { entry, pieces } of await nearestByVector(prompt.reading, entries, store)) {
      if (entry.text === undefined) continue;
      const features = pairFeatures({ text: entry.text, vector: decodeVector(entry.vector), pieces }, { text: prompt.text, ...prompt.reading });
      if (!features) continue;
      const rank = logitOf(judge, features);
      if (!best || rank > best.rank) best = { entry, features, rank };
    }
    if (!best) return undefined;
    const cross = await embedder.crossLogit!(best.entry.text!, prompt.text, prompt.caller);
    return { entry: best.entry, s: probabilityOf(logitOf(judge, [...best.features, cross])) };
  };
}

/** The JUDGED entries nearest by sentence vector, with their word pieces (an entry whose pieces were evicted is left out: never a guess). */
async function nearestByVector(reading: Reading, entries: SemanticEntry[], store: Store): Promise<{ entry: SemanticEntry; pieces: Float32Array }[]> {
  const byVector = entries.map((entry) => ({ entry, cosine: similarity(reading.vector, decodeVector(entry.vector)) }))
    .sort((a, b) => b.cosine - a.cosine).slice(0, JUDGED);
  const pieces = await Promise.all(byVector.map(({ entry }) => store.cacheGet(piecesKey(entry.id))));
  return byVector.flatMap(({ entry }, i) => (pieces[i] === undefined ? [] : [{ entry, pieces: decodeVector(pieces[i]) }]));
}
