import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GenerationEvent } from '../engines/engine.ts';
import { toChunks } from './chunks.ts';

const meta = { id: 'service-1', created: 1, model: 'service' as const };
const done: GenerationEvent = { type: 'done', finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 2 } };

async function collect(events: GenerationEvent[], includeUsage = false) {
  async function* source() {
    yield* events;
  }
  const out = [];
  for await (const chunk of toChunks(meta, source(), { includeUsage })) out.push(chunk);
  return out;
}

describe('toChunks', () => {
  it('puts the role on the first delta only and finish_reason on the last choice chunk only', async () => {
    const chunks = await collect([{ type: 'content', text: 'Hi' }, { type: 'content', text: '!' }, done]);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    assert.ok(chunks.slice(1).every((c) => c.choices[0]?.delta.role === undefined));
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason), [null, null, null, 'stop']);
    assert.ok(chunks.every((c) => c.id === 'service-1' && c.created === 1));
    assert.ok(chunks.every((c) => !('usage' in c)));
  });

  it('adds a usage chunk with empty choices when asked, and null usage before it', async () => {
    const chunks = await collect([{ type: 'content', text: 'Hi' }, done], true);
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
  });

  it('wraps reasoning in <think> tags before the answer', async () => {
    const chunks = await collect([
      { type: 'reasoning', text: 'hmm' },
      { type: 'reasoning', text: ' ok' },
      { type: 'content', text: 'Yes' },
      done,
    ]);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(text, '<think>hmm ok</think>Yes');
  });

  it('streams tool calls with id, type and name first, then argument fragments', async () => {
    const chunks = await collect([
      { type: 'tool_call', index: 0, id: 'call_1', name: 'f', arguments: '' },
      { type: 'tool_call', index: 0, arguments: '{"a":' },
      { type: 'tool_call', index: 0, arguments: '1}' },
      { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 1, completionTokens: 1 } },
    ]);
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    assert.deepEqual(deltas[0], { index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } });
    assert.deepEqual(deltas.slice(1), [
      { index: 0, function: { arguments: '{"a":' } },
      { index: 0, function: { arguments: '1}' } },
    ]);
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'tool_calls');
  });

  it('fails when the engine ends without done', async () => {
    await assert.rejects(collect([{ type: 'content', text: 'x' }]), /without a done event/);
  });
});
