import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GenerationEvent } from '../engines/engine.ts';
import { foldEvents } from '../engines/fold-events.ts';
import { toCompletionResponse } from './completion-response.ts';

async function* source(events: GenerationEvent[]) {
  yield* events;
}

describe('foldEvents', () => {
  it('joins content and reasoning and assembles tool calls from fragments', async () => {
    const folded = await foldEvents(source([
      { type: 'reasoning', text: 'think' },
      { type: 'tool_call', index: 0, id: 'c1', name: 'f', arguments: '{"x"' },
      { type: 'tool_call', index: 1, id: 'c2', name: 'g', arguments: '{}' },
      { type: 'tool_call', index: 0, arguments: ':1}' },
      { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 4, completionTokens: 6 } },
    ]));
    assert.equal(folded.reasoning, 'think');
    assert.deepEqual(folded.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]), [
      ['c1', 'f', '{"x":1}'],
      ['c2', 'g', '{}'],
    ]);
    const response = toCompletionResponse({ id: 'service-9', created: 5, model: 'service-beta' }, folded, true);
    assert.equal(response.choices[0]?.message.content, null);
    assert.equal(response.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(response.reasoning, 'think');
    assert.equal(response.model, 'service-beta');
    assert.equal(response.usage.total_tokens, 10);
  });

  it('leaves reasoning out of the response when it was not asked for', async () => {
    const folded = await foldEvents(source([
      { type: 'content', text: 'a' },
      { type: 'done', finishReason: 'length', usage: { promptTokens: 1, completionTokens: 1 } },
    ]));
    const response = toCompletionResponse({ id: 'service-9', created: 5, model: 'service' }, folded, false);
    assert.equal('reasoning' in response, false);
    assert.equal(response.choices[0]?.message.content, 'a');
    assert.equal(response.choices[0]?.finish_reason, 'length');
  });
});
