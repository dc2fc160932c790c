import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fixedTerms } from './candidate-filter.ts';

const same = (a: string, b: string) => fixedTerms(a) === fixedTerms(b);

describe('the semantic cache\'s candidate filter', () => {
  it('splits near misses that differ in a number, a unit\'s place, a name, an extreme, an operator or a negation', () => {
    const pairs: [string, string][] = [
      ['Is 7 a prime number?', 'Is 9 a prime number?'],
      ['How many miles is 5 km?', 'How many kilometres is 5 miles?'],
      ['What is the capital of France?', 'What is the capital of Germany?'],
      ['How many hours are in a day?', 'How many hours are in a week?'],
      ['What is the largest planet?', 'What is the smallest planet?'],
      ['What is 1 plus 1?', 'What is 1 minus 1?'],
      ['Is a tomato a fruit?', 'Is a tomato not a fruit?'],
      ['Is it safe?', "Isn't it safe?"],
      ['Which season comes after spring?', 'Which season comes after autumn?'],
    ];
    for (const [a, b] of pairs) assert.equal(same(a, b), false, `"${a}" and "${b}" may be compared`);
  });

  it('keeps paraphrases together: number words, unit spellings, possessives, synonyms of an extreme, sentence openers', () => {
    const pairs: [string, string][] = [
      ['How many miles is 5 km?', 'What is five kilometers in miles?'],
      ['Convert 5 kilometres to miles.', '5 km in miles?'],
      ['What is the capital of France?', "Which city is France's capital?"],
      ['Name the largest ocean.', 'Which ocean is the biggest?'],
      ['How many minutes are in an hour?', 'An hour has how many minutes?'],
      ['Who wrote Romeo and Juliet?', 'Romeo and Juliet was written by whom?'],
    ];
    for (const [a, b] of pairs) assert.equal(same(a, b), true, `"${a}" and "${b}" are kept apart: ${fixedTerms(a)} / ${fixedTerms(b)}`);
  });
});
