// The semantic cache's labelled sets (bench/data/semantic-cache*.txt), read by the cache bench and
// the ceiling bench alike: paraphrase groups (one answer each) and near-miss pairs (alike in words,
// different answers). The held-out sets are sealed by their SHA-256: a changed file is refused.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fixedTerms, wordPrints, wordsApart } from '../../src/chat/semantic/candidate-filter.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

export interface Part { groups: string[][]; pairs: [string, string][]; }
const part = (): Part => ({ groups: [], pairs: [] });

/** The held-out sets, sealed: each committed before the tuning of its round and never run while tuning. */
export const HELDOUT = {
  heldout4: { file: 'bench/data/semantic-cache-heldout-4.txt', sha256: '54e16588cbcfa052ab1acaaf875326bdff97e1169478169ae7f202942ee9e314' },
  heldout3: { file: 'bench/data/semantic-cache-heldout-3.txt', sha256: '6b980cbd292ab7ad563c50533761016023832d195bcc44e220965f69e74f366b' },
  heldout2: { file: 'bench/data/semantic-cache-heldout-2.txt', sha256: '42f61d5754a927506834e4877ea10cc308cecd83667b8ca8a87a7cf52be01e24' },
  // Last, so the earlier sets' figures stay as they were: it is served on the pool they leave.
  heldout5: { file: 'bench/data/semantic-cache-heldout-5.txt', sha256: '317584b93b840aa9481b66f090bf15976e1c0042722cc49c8408cd27365c64be' },
  // Sealed 28 November and first read once the judge built into the cache was fixed; last, as 5 was.
  heldout6: { file: 'bench/data/semantic-cache-heldout-6.txt', sha256: '8c72f87e7b795044ce5f8ac9945d22815b36b32feee3a11e2635acc959c86c4d' },
  // Sealed 29 November (voice-assistant intents, 116 traps) and first read once the ceiling's
  // budget judge was fixed; last, as 5 and 6 were.
  heldout7: { file: 'bench/data/semantic-cache-heldout-7.txt', sha256: '144568f1f90fef0ade8d896dc0312b16e8aef976b9d99b5113135bb2c94a5992' },
  // Sealed 2 December (six more voice-assistant skills, 53 traps) before its first reading, the
  // trial of the budget judge in the cache; last, as 5, 6 and 7 were.
  heldout8: { file: 'bench/data/semantic-cache-heldout-8.txt', sha256: 'de5f7c9d756a973d92e1917f8366b95b95acbf7d0c75fff2a25c61e2ac5135ea' },
};
export type Held = keyof typeof HELDOUT;
/** In this order: 4, 3, 2 (newest first), then 5, 6, 7 and 8. */
export const HELD = Object.keys(HELDOUT) as Held[];
/** Tuning data: the hand-written set (its former held-out part is spent: it was seen) and fow-cache's tuning half. */
const TUNING = ['bench/data/semantic-cache.txt', 'bench/data/semantic-cache-tuning-2.txt'];

export interface Sets { tune: Part; held: Record<Held, Part>; /** Each question's answer (its label). */ answer: Map<string, string>; }

/** The tuning part, and the held-out sets unless `withHeldOut` is false (then they are not even read). */
export function loadSets(withHeldOut: boolean): Sets {
  const answer = new Map<string, string>();
  const parse = (text: string, into: Part) => {
    for (const line of text.split('\n')) {
      if (line.startsWith('G ')) {
        const [label, ...phrasings] = line.slice(2).split('|').map((s) => s.trim());
        for (const p of phrasings) answer.set(p, label!);
        into.groups.push(phrasings);
      } else if (line.startsWith('N ')) {
        const [first, second] = line.slice(2).split('||').map((half) => half.split('|').map((s) => s.trim()));
        answer.set(first![1]!, first![0]!);
        answer.set(second![1]!, second![0]!);
        into.pairs.push([first![1]!, second![1]!]);
      }
    }
  };
  const tune = part();
  const held = Object.fromEntries(HELD.map((h) => [h, part()])) as Record<Held, Part>;
  for (const file of TUNING) parse(readFileSync(`${ROOT}${file}`, 'utf8'), tune);
  if (!withHeldOut) return { tune, held, answer };
  for (const name of HELD) {
    const { file, sha256 } = HELDOUT[name];
    const sealed = readFileSync(`${ROOT}${file}`);
    const sha = createHash('sha256').update(sealed).digest('hex');
    if (sha !== sha256) throw new Error(`${file} changed (SHA-256 ${sha}, sealed ${sha256}): a held-out set is not edited; write a new one`);
    parse(sealed.toString('utf8'), held[name]);
  }
  return { tune, held, answer };
}

/** A part as labelled pairs: every two phrasings of a group, every near-miss pair; with the candidate filter's verdicts. */
export const pairsOf = (set: string, part: Part) => [
  ...part.groups.flatMap((g) => g.flatMap((a, i) => g.slice(i + 1).map((b) => ({ set, a, b, paraphrase: true })))),
  ...part.pairs.map(([a, b]) => ({ set, a, b, paraphrase: false })),
].map((p) => ({ ...p, sameFixedTerms: fixedTerms(p.a) === fixedTerms(p.b), wordsApart: wordsApart(wordPrints(p.a), wordPrints(p.b)) }));
