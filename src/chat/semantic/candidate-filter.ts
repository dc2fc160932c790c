import { createHash } from 'node:crypto';

/**
 * The semantic cache's candidate filter, applied before any similarity: two last turns can be
 * compared only when they carry the same *fixed terms*, the words a paraphrase keeps and a near
 * miss changes. A sentence encoder puts "Is 7 a prime number?" and "Is 9 a prime number?" as close
 * as two paraphrases; these words tell them apart without a model. The classes (designed on the
 * benchmark's tuning part only, bench/data/semantic-cache.txt):
 *
 * - numbers (digits, or number words up to twenty), each with the unit that follows it, so
 *   "5 km in miles" (5 km) and "5 miles in km" (5 mi) differ while "five kilometers" is "5 km";
 * - units anywhere, in a small table of synonyms ("kilometres" = "km");
 * - names: capitalised words, compared in lower case ("France's" is "france"); a sentence's first
 *   word counts unless it is one of the question openers below; seasons count as names too;
 * - extremes ("largest" = "biggest" = "tallest", against "smallest" = "least"), arithmetic
 *   operators, and negations.
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
    if (n !== undefined) numbers.push(`${n}${unitOf(words[i + 1]?.toLowerCase() ?? '') ?? ''}`);
    const unit = unitOf(lower);
    if (unit) units.push(unit);
    else if (SEASONS.has(lower)) names.push(lower);
    else if (/^\p{Lu}/u.test(word) && lower !== 'i' && !(i === 0 && OPENERS.has(lower)) && n === undefined) names.push(lower);
    const mark = MARKS[lower] ?? (lower.endsWith("n't") ? 'not' : undefined);
    if (mark) marks.push(mark);
  });
  const sorted = (list: string[]) => list.sort().join(',');
  return [sorted(numbers), sorted(units), sorted(names), sorted(marks)].join('|');
}

// "one" is left out: "one hour" and "an hour" are the same question, and "a" cannot count as 1.
const wordsIn = (text: string) => text.replace(/[’‘]/g, "'").split(/[^\p{L}\p{N}'.]+/u).map((w) => w.replace(/^'+|[.']+$/g, '')).filter((w) => w !== '');

/**
 * The second rule, between a prompt and one cached entry: two prompts *one word apart* — the same
 * words in the same order but one, articles left out and synonyms above read as one — are a near
 * miss ("Is a whale a mammal?" / "Is a shark a mammal?", "Does hot air rise?" / "Does cold air
 * rise?", "capital of Japan" / "currency of Japan"), never compared. A paraphrase rewords more than
 * one word, or swaps words this file reads as one. Entries keep these words as short hashes
 * (`wordPrints`), so the store holds no prompt text.
 */
export function wordPrints(text: string): string[] {
  return wordsIn(text).map((word) => {
    const lower = word.toLowerCase().replace(/'s$/, '');
    return numberOf(lower) ?? MARKS[lower] ?? unitOf(lower) ?? lower;
  }).filter((w) => !ARTICLES.has(w)).map((w) => createHash('sha256').update(w).digest('base64url').slice(0, 8));
}

export function oneWordApart(a: string[], b: string[]): boolean {
  return a.length === b.length && a.filter((w, i) => w !== b[i]).length === 1;
}

const ARTICLES = new Set(['a', 'an', 'the']);

const NUMBER_WORDS = ['zero', '', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty'];

function numberOf(word: string): string | undefined {
  if (/^\d+(\.\d+)?$/.test(word.replace(/,/g, ''))) return String(Number(word.replace(/,/g, '')));
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
const OPENERS = new Set(['what', 'which', 'who', 'whom', 'whose', 'how', 'when', 'where', 'why', 'is', 'are', 'was', 'were',
  'do', 'does', 'did', 'can', 'could', 'will', 'would', 'should', 'name', 'tell', 'give', 'list', 'count', 'convert', 'number',
  'please', 'explain', 'describe', 'define', 'in', 'on', 'at', 'the', 'a', 'an', 'for', 'from', 'of', 'to', 'by', 'with', 'if', 'i', 'my']);

/** Extremes, operators and negations, each to the one mark its synonyms share. */
const MARKS: Record<string, string> = Object.fromEntries(Object.entries({
  max: ['largest', 'biggest', 'greatest', 'highest', 'tallest', 'longest', 'most', 'maximum'],
  min: ['smallest', 'least', 'lowest', 'shortest', 'tiniest', 'minimum', 'fewest'],
  '+': ['plus', 'add', 'added', 'sum'], '-': ['minus', 'subtract', 'subtracted', 'less'],
  '*': ['times', 'multiplied'], '/': ['divided', 'quotient'],
  not: ['not', 'no', 'never', 'none', 'nothing', 'neither', 'nor', 'without'],
}).flatMap(([mark, words]) => words.map((w) => [w, mark])));
