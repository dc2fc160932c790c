import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { GenerationEvent } from './engine.ts';
import { ThinkTagSplitter } from './think-tags.ts';

function split(deltas: string[]) {
  const splitter = new ThinkTagSplitter();
  const events: GenerationEvent[] = [...deltas.flatMap((d) => splitter.push(d)), ...splitter.flush()];
  const join = (type: string) => events.filter((e) => e.type === type).map((e) => ('text' in e ? e.text : '')).join('');
  return { reasoning: join('reasoning'), content: join('content') };
}

it('separates a leading think block even when tags are cut across deltas', () => {
  assert.deepEqual(split(['<th', 'ink>step 1', ' step 2</', 'thi', 'nk>The answer']), {
    reasoning: 'step 1 step 2',
    content: 'The answer',
  });
});

it('passes plain content through, including a later literal <think>', () => {
  assert.deepEqual(split(['Hello ', 'world <think>x</think>']), { reasoning: '', content: 'Hello world <think>x</think>' });
});

it('keeps an unterminated think block as reasoning', () => {
  assert.deepEqual(split(['<think>only thoughts']), { reasoning: 'only thoughts', content: '' });
});
