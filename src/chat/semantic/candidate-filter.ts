import { createHash } from 'node:crypto';

/**
 * The semantic cache's candidate filter, applied before any similarity: two last turns can be
 * compared only when they carry the same *fixed terms*, the words a paraphrase keeps and a near
 * miss changes. A sentence encoder puts "Is 7 a prime number?" and "Is 9 a prime number?" as close
 * as two paraphrases; these words tell them apart without a model. The classes (designed on the
 * benchmark's tuning parts only):
 *
 * - numbers (digits, ordinals, or number words up to twenty), each with the unit that follows
 *   it, so "5 km in miles" (5 km) and "5 miles in km" (5 mi) differ while "five kilometers" is
 *   "5 km"; "a", "an" or "one" before a unit is one of it ("one mile" against "one kilometre");
 * - units anywhere, in a small table of synonyms ("kilometres" = "km");
 * - names: capitalised words, compared in lower case ("France's" is "france"); a sentence's first
 *   word counts unless it is one of the question openers below; seasons count as names too;
 * - extremes ("largest" = "biggest" = "tallest", against "smallest" = "least"), arithmetic
 *   operators, negations ("non-refundable" too), and the particles "out" and "off";
 * - a direction: the words after "from" and after "to" ("from savings to current").
 *
 * Designed on the tuning parts only (semantic-cache.txt and semantic-cache-tuning-2.txt).
 *
 * It errs towards splitting: a paraphrase that names a thing another does not ("orbiting the Sun")
 * is a miss, never a wrong hit. What it does not separate ("round" / "flat") is left to the bound.
 */
export function fixedTerms(text: string): string {
  const words = wordsIn(text);
  const numbers: string[] = [];
  const units: string[] = [];
  const names: string[] = [];
  const marks: string[] = [];
  words.forEach((word, i) => {
    const lower = word.toLowerCase().replace(/'s$/, '');
    const n = numberOf(lower);
    const next = unitOf(words[i + 1]?.toLowerCase() ?? '');
    if (n !== undefined) numbers.push(`${n}${next ?? ''}`);
    // "an hour", "a mile", "one mile": one of that unit ("one" alone is no number: see below).
    else if (next && ONE.has(lower)) numbers.push(`1${next}`);
    const unit = unitOf(lower);
    if (unit) units.push(unit);
    else if (SEASONS.has(lower)) names.push(lower);
    else if (/^\p{Lu}/u.test(word) && lower !== 'i' && !(i === 0 && OPENERS.has(lower)) && n === undefined) names.push(lower);
    const mark = markOf(lower);
    if (mark) marks.push(mark);
  });
  const sorted = (list: string[]) => list.sort().join(',');
  return [sorted(numbers), sorted(units), sorted(names), sorted(marks), direction(words)].filter((t, i) => i < 4 || t !== '').join('|');
}

const ONE = new Set(['a', 'an', 'one']);

/**
 * A direction, "from X to Y" (or into): the words after each, so "from savings to current" and
 * "from current to savings" differ though they hold the same words (their vectors sit at 0.99).
 */
function direction(words: string[]): string {
  const lower = words.map((w) => w.toLowerCase());
  const after = (at: number) => lower.slice(at + 1).find((w) => !DETERMINERS.has(w)) ?? '';
  const from = lower.indexOf('from');
  const to = lower.findIndex((w) => w === 'to' || w === 'into');
  return from < 0 || to < 0 ? '' : `${after(from)}>${after(to)}`;
}
const DETERMINERS = new Set(['a', 'an', 'the', 'my', 'your', 'our', 'their', 'his', 'her', 'its', 'this', 'that', 'these', 'those', 'some']);

// "one" is no number alone ("one of my cards"): only before a unit, where "an hour" is "one hour" (ONE).
const wordsIn = (text: string) => text.replace(/[’‘]/g, "'").split(/[^\p{L}\p{N}'.]+/u).map((w) => w.replace(/^'+|[.']+$/g, '')).filter((w) => w !== '');

/**
 * The second rule, between a prompt and one cached entry: two prompts *a few words apart* — their
 * content words the same, in any order, but for some swapped, at most MAX_APART counted on both
 * sides (one swap is two) — are a near miss ("Is a whale a mammal?" / "Is a shark a mammal?",
 * "included in" / "excluded from", "subscribe" / "unsubscribe"), never compared: MiniLM puts them
 * at 0.8-0.99, as near as paraphrases. A paraphrase rewords more than that, or only reorders,
 * misspells (`print`), changes function words (`FUNCTION_WORDS`) or adds words: an added word is
 * left to the bound, as paraphrases add them as often as near misses do ("Which city is France's
 * capital?", "joint account balance"). Entries keep these words as short hashes (`wordPrints`), so
 * the store holds no prompt text.
 */
export function wordPrints(text: string): string[] {
  return wordsIn(text).map((word) => {
    const lower = word.toLowerCase().replace(/'s$/, '');
    return numberOf(lower) ?? markOf(lower) ?? unitOf(lower) ?? lower;
  }).filter((w) => !FUNCTION_WORDS.has(w)).map((w) => createHash('sha256').update(print(w)).digest('base64url').slice(0, 8));
}

/**
 * Chosen on the tuning parts' labelled pairs: with 2, 200 of 290 paraphrase pairs and 19 of 169
 * near misses may meet; with 3, 186 and 17 (fewer pairs of different questions meet: 66 against
 * 86 at a similarity of 0.6 or more); with 4, 178 and 14.
 */
export const MAX_APART = 3;

export function wordsApart(a: string[], b: string[]): boolean {
  const rest = [...b];
  let onlyA = 0;
  for (const w of a) {
    const at = rest.indexOf(w);
    if (at < 0) onlyA++;
    else rest.splice(at, 1);
  }
  const apart = onlyA + rest.length;
  // Only words swapped: a paraphrase often adds one ("Which city is France's capital?").
  if (onlyA === 0 || rest.length === 0) return false;
  return apart > 0 && apart <= MAX_APART;
}

/**
 * A word as the rule compares it: words of four letters or more by their consonants, doubled
 * letters once, after the first letter ("electricty" is "electricity", "chlid" is "child"), so a
 * misspelling is no changed word; shorter words as they are ("hot" is not "hat").
 */
function print(word: string): string {
  if (word.length < 4 || !/^\p{L}+$/u.test(word)) return word;
  return (word[0]! + word.slice(1).replace(/[aeiouy]/g, '')).replace(/(.)\1+/g, '$1');
}

/** Words that change no meaning a cached answer depends on: articles, pronouns, auxiliaries, greetings. */
const FUNCTION_WORDS = new Set(['a', 'an', 'the', 'i', 'me', 'my', 'you', 'your', 'we', 'our', 'it', 'its', 'is', 'are', 'was',
  'were', 'be', 'am', 'do', 'does', 'did', 'can', 'could', 'would', 'will', 'should', 'shall', 'may', 'might', 'to', 'of',
  'for', 'with', 'by', 'at', 'about', 'please', 'hi', 'hello', 'hey', 'thanks', 'thank', 'sorry', 'what', "what's", 'how',
  'which', 'tell', 'there', 'and', 'or', 'so', 'just', 'any', 'some', 'have', 'has', 'got', 'get', "i'm", "it's", "where's", 'that', 'this', 'in', 'on', 'into', 'from', 'as', 'many', 'much', 'name', 'give', 'number', 'count', 'please', 'whom', 'which', 'called', 'known']);

const NUMBER_WORDS = ['zero', '', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty'];

function numberOf(word: string): string | undefined {
  if (/^\d+(\.\d+)?$/.test(word.replace(/,/g, ''))) return String(Number(word.replace(/,/g, '')));
  const ordinal = /^(\d+)(st|nd|rd|th)$/.exec(word); // dates: "the 3rd" is 3
  if (ordinal) return ordinal[1];
  const i = word === '' ? -1 : NUMBER_WORDS.indexOf(word);
  return i < 0 ? undefined : String(i);
}

/** Unit spellings to one name; a trailing plural "s" is dropped first ("miles", "hours"). */
const UNITS: Record<string, string> = Object.fromEntries(Object.entries({
  km: ['km', 'kilometre', 'kilometer', 'kms'], mi: ['mi', 'mile'], m: ['metre', 'meter'], cm: ['cm', 'centimetre', 'centimeter'],
  ft: ['ft', 'foot', 'feet'], in: ['inch', 'inche'], kg: ['kg', 'kilogram', 'kilo'], lb: ['lb', 'pound'], g: ['gram'],
  l: ['litre', 'liter'], gal: ['gallon'], c: ['celsius', '°c'], f: ['fahrenheit', '°f'],
  s: ['seconds', 'sec'], min: ['minute', 'min'], h: ['hour', 'hr'], day: ['day'], week: ['week'], month: ['month'], year: ['year'],
  '%': ['percent', '%'],
}).flatMap(([unit, spellings]) => spellings.map((s) => [s, unit])));

function unitOf(word: string): string | undefined {
  return UNITS[word] ?? (word.endsWith('s') ? UNITS[word.slice(0, -1)] : undefined);
}

/** Seasons are names English does not capitalise (months and weekdays it does). */
const SEASONS = new Set(['spring', 'summer', 'autumn', 'winter']);

/** Words that open a question in capitals without naming anything. */
const OPENERS = new Set(['hi', 'hello', 'hey', 'morning', 'sorry', 'thanks', 'excuse', 'what', 'which', 'who', 'whom', 'whose', 'how', 'when', 'where', 'why', 'is', 'are', 'was', 'were',
  'do', 'does', 'did', 'can', 'could', 'will', 'would', 'should', 'name', 'tell', 'give', 'list', 'count', 'convert', 'number',
  'please', 'explain', 'describe', 'define', 'in', 'on', 'at', 'the', 'a', 'an', 'for', 'from', 'of', 'to', 'by', 'with', 'if', 'i', 'my']);

/** A word's mark: "can't", "cannot" and "not" are one negation (the auxiliary is a function word). */
const markOf = (lower: string): string | undefined => MARKS[lower] ?? (lower.endsWith("n't") ? 'not' : undefined);

/** Extremes, operators and negations, each to the one mark its synonyms share. */
const MARKS: Record<string, string> = Object.fromEntries(Object.entries({
  max: ['largest', 'biggest', 'greatest', 'highest', 'tallest', 'longest', 'most', 'maximum'],
  min: ['smallest', 'least', 'lowest', 'shortest', 'tiniest', 'minimum', 'fewest'],
  '+': ['plus', 'add', 'added', 'sum'], '-': ['minus', 'subtract', 'subtracted', 'less'],
  '*': ['times', 'multiplied'], '/': ['divided', 'quotient'],
  not: ['not', 'cannot', 'no', 'non', 'never', 'none', 'nothing', 'neither', 'nor', 'without'],
  // Particles that turn a verb around ("opt out", "check out", "switch off"); "in" and "on" are too common to mark.
  out: ['out'], off: ['off'],
}).flatMap(([mark, words]) => words.map((w) => [w, mark])));
