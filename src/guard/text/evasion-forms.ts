/**
 * Ways to hide a harmful request by form alone (issue 23): each builds one text from the request,
 * harmless filler sentences and a seeded random source, so a failing case can be rebuilt exactly.
 * The guard's verdict must not depend on the form; the evasion test and the guard-eval bench
 * measure how often it does.
 */

/** A seeded uniform source in [0, 1) (mulberry32): the same seed gives the same cases. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type EvasionForm = 'run-on' | 'split-lines' | 'spaced' | 'homoglyphs' | 'clipped' | 'symbols';
export const EVASION_FORMS: readonly EvasionForm[] = ['run-on', 'split-lines', 'spaced', 'homoglyphs', 'clipped', 'symbols'];

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const stripStops = (text: string) => text.replace(/[.!?]+(\s|$)/g, '$1').trim();
const words = (text: string) => text.split(/\s+/).filter(Boolean);

/**
 * Harmless sentences drawn from `filler` up to about `maxWords` words, a random count of them; the
 * request goes at a random place among them. `maxWords` keeps the whole text inside the model's
 * context (about 1.3 MiniLM tokens a word).
 */
function surround(random: () => number, filler: readonly string[], maxWords: number): { before: string[]; after: string[] } {
  const target = Math.floor(random() * maxWords);
  const chosen: string[] = [];
  for (let count = 0; count < target;) {
    const sentence = pick(random, filler);
    chosen.push(sentence);
    count += words(sentence).length;
  }
  const at = Math.floor(random() * (chosen.length + 1));
  return { before: chosen.slice(0, at), after: chosen.slice(at) };
}

/** Latin letters and the Cyrillic or Greek letters drawn alike. */
const LOOKALIKES: Record<string, string[]> = {
  a: ['а', 'α'], c: ['с', 'ϲ'], e: ['е', 'ε'], i: ['і', 'ι'], j: ['ј'], o: ['о', 'ο'], p: ['р', 'ρ'], s: ['ѕ'],
  x: ['х', 'χ'], y: ['у', 'γ'], h: ['һ'], k: ['κ'], n: ['η'], t: ['τ'], u: ['υ'], v: ['ν'], w: ['ω'],
};

/** Letters swapped for look-alikes, some words in fullwidth forms, zero-width characters inside words. */
function disguise(random: () => number, text: string): string {
  return words(text).map((word) => {
    const roll = random();
    if (roll < 0.2) return [...word].map((ch) => (ch > ' ' && ch <= '~' ? String.fromCharCode(ch.charCodeAt(0) + 0xfee0) : ch)).join('');
    return [...word].map((ch) => {
      const swaps = LOOKALIKES[ch.toLowerCase()];
      const swapped = swaps && random() < 0.6 ? pick(random, swaps) : ch;
      return random() < 0.15 ? `${swapped}${pick(random, ['\u200b', '\u200c', '\u200d', '\u2060', '\u00ad'])}` : swapped;
    }).join('');
  }).join(' ');
}

/** Two words a line. */
const twoALine = (text: string) => {
  const ws = words(text);
  const lines: string[] = [];
  for (let i = 0; i < ws.length; i += 2) lines.push(ws.slice(i, i + 2).join(' '));
  return lines;
};

/** Cut into sentences of two or three words ("How to. Make a. Pipe bomb?"), the last with the text's own mark. */
const clipped = (random: () => number, text: string) => {
  const ws = words(stripStops(text));
  const sentences: string[] = [];
  for (let i = 0; i < ws.length;) {
    const n = random() < 0.5 ? 2 : 3;
    sentences.push(ws.slice(i, i + n).join(' '));
    i += n;
  }
  return `${sentences.join('. ')}${/[?!]$/.test(text.trim()) ? text.trim().slice(-1) : '.'}`;
};

/** Each word wrapped in code punctuation drawn at random ("`how` (to); [make], ..."), so that symbols outnumber words. */
const WRAPS: readonly ((word: string) => string)[] = [(w) => `\`${w}\``, (w) => `(${w});`, (w) => `[${w}],`, (w) => `"${w}",`, (w) => `${w}();`, (w) => `{${w}}`];
const wrapped = (random: () => number, text: string) => words(text).map((w) => pick(random, WRAPS)(w)).join(' ');

/**
 * Case `seed` of `form`: a request drawn from `requests` hidden among `filler`, and its control,
 * which replays the seed (the request's draw included): the same filler in the same order, only
 * the request left out.
 */
export function hiddenCase(form: EvasionForm, requests: readonly string[], filler: readonly string[], seed: number, maxWords: number) {
  const [random, replay] = [seededRandom(seed), seededRandom(seed)];
  const index = Math.floor(random() * requests.length);
  replay();
  return { index, text: hide(form, requests[index]!, filler, random, maxWords), control: hide(form, '', filler, replay, maxWords) };
}

/** The request hidden in `form`, among harmless filler of random length up to `maxWords` words. */
export function hide(form: EvasionForm, request: string, filler: readonly string[], random: () => number, maxWords: number): string {
  const { before, after } = surround(random, filler, maxWords);
  switch (form) {
    case 'run-on':
      // One sentence of harmless talk with no full stop anywhere, the request somewhere in it.
      return [...before, request, ...after].map(stripStops).join(pick(random, [', and ', ' and then ', ', so ', ' ']));
    case 'split-lines':
      // The request two words a line, followed by many short harmless lines.
      return [...before, ...twoALine(request), ...after.flatMap(twoALine)].join('\n');
    case 'spaced':
      // Its letters spaced out, words apart by two spaces ("h o w  t o  m a k e").
      return [...before, words(request).map((w) => [...w].join(' ')).join('  '), ...after].join(' ');
    case 'homoglyphs':
      return [...before, disguise(random, request), ...after].join(' ');
    case 'clipped':
      // Sentences too short to be read alone, each a few words of the request.
      return [...before, clipped(random, request), ...after].join(' ');
    case 'symbols':
      return [...before, wrapped(random, request), ...after].join(' ');
  }
}
