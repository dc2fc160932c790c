import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Engine, GenerationEvent } from './engine.ts';
import { ServiceError } from '../errors/service-error.ts';
import { foldEvents } from './fold-events.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import { withVerifiedOutput } from './verified-output.ts';

/** Answers each attempt with the next of `answers` (as content), counting attempts. */
function engineAnswering(answers: { text: string; finish?: 'stop' | 'length' }[]) {
  let attempts = 0;
  const engine: Engine = {
    description: 'answers',
    async *generate(): AsyncGenerator<GenerationEvent> {
      const answer = answers[Math.min(attempts++, answers.length - 1)]!;
      yield { type: 'content', text: answer.text };
      yield { type: 'done', finishReason: answer.finish ?? 'stop', usage: { promptTokens: 2, completionTokens: 3 } };
    },
  };
  return { engine, attempts: () => attempts };
}

const jsonRequest = () =>
  normalizeRequest({
    model: 'service',
    messages: [{ role: 'user', content: 'x' }],
    response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', required: ['a'], properties: { a: { type: 'integer' } } } } },
  } as never, new AbortController().signal);

describe('withVerifiedOutput', () => {
  it('passes a conforming answer through on the first attempt', async () => {
    const fake = engineAnswering([{ text: '{"a":1}' }]);
    const folded = await foldEvents(withVerifiedOutput(fake.engine).generate(jsonRequest()));
    assert.equal(folded.content, '{"a":1}');
    assert.equal(fake.attempts(), 1);
  });

  it('generates once more when the answer does not conform, and counts both attempts in usage', async () => {
    const fake = engineAnswering([{ text: '{"a":"one"}' }, { text: '{"a":1}' }]);
    const folded = await foldEvents(withVerifiedOutput(fake.engine).generate(jsonRequest()));
    assert.equal(folded.content, '{"a":1}');
    assert.deepEqual(folded.usage, { promptTokens: 4, completionTokens: 6 });
  });

  it('fails clearly after two answers that do not conform', async () => {
    const fake = engineAnswering([{ text: 'not json' }]);
    await assert.rejects(foldEvents(withVerifiedOutput(fake.engine).generate(jsonRequest())),
      (e: unknown) => e instanceof ServiceError && e.code === 'output_validation_failed' && /not JSON/.test(e.message));
    assert.equal(fake.attempts(), 2);
  });

  it('passes an answer cut at max_tokens on as it is', async () => {
    const fake = engineAnswering([{ text: '{"a":', finish: 'length' }]);
    const folded = await foldEvents(withVerifiedOutput(fake.engine).generate(jsonRequest()));
    assert.deepEqual([folded.content, folded.finishReason], ['{"a":', 'length']);
  });

  it('checks tool-call arguments against the function parameters', async () => {
    let attempts = 0;
    const engine: Engine = {
      description: 'tools',
      async *generate() {
        const args = attempts++ === 0 ? '{"city":5}' : '{"city":"Paris"}';
        yield { type: 'tool_call', index: 0, id: 'c', name: 'get_weather', arguments: args };
        yield { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 1, completionTokens: 1 } };
      },
    };
    const request = normalizeRequest({
      model: 'service',
      messages: [{ role: 'user', content: 'x' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      tool_choice: 'required',
    } as never, new AbortController().signal);
    const folded = await foldEvents(withVerifiedOutput(engine).generate(request));
    assert.equal(folded.toolCalls[0]?.function.arguments, '{"city":"Paris"}');
    assert.equal(attempts, 2);
  });

  it('keeps finish_reason length for a tool call cut at max_tokens (it is not a complete call)', async () => {
    const engine: Engine = {
      description: 'cut tool call',
      async *generate() {
        yield { type: 'tool_call', index: 0, id: 'c', name: 'get_weather', arguments: '{"city":"Par' };
        yield { type: 'done', finishReason: 'length', usage: { promptTokens: 1, completionTokens: 5 } };
      },
    };
    const request = normalizeRequest({
      model: 'service', messages: [{ role: 'user', content: 'x' }], max_tokens: 5, tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    } as never, new AbortController().signal);
    const folded = await foldEvents(withVerifiedOutput(engine).generate(request));
    assert.equal(folded.finishReason, 'length');
  });

  it('gives a second attempt only what the first left of max_tokens, and bills both within it', async () => {
    const budgets: (number | undefined)[] = [];
    const engine: Engine = {
      description: 'not JSON, then JSON',
      async *generate(request) {
        budgets.push(request.maxTokens);
        yield { type: 'content', text: budgets.length === 1 ? 'nope' : '{"a":1}' };
        yield { type: 'done', finishReason: 'stop', usage: { promptTokens: 2, completionTokens: 3 } };
      },
    };
    const request = { ...jsonRequest(), maxTokens: 8 };
    const folded = await foldEvents(withVerifiedOutput(engine).generate(request));
    assert.deepEqual(budgets, [8, 5]);
    assert.equal(folded.usage.completionTokens, 6);
    budgets.length = 0;
    await assert.rejects(foldEvents(withVerifiedOutput(engine).generate({ ...jsonRequest(), maxTokens: 3 })),
      (e: unknown) => e instanceof ServiceError && /left no room/.test(e.message));
    assert.deepEqual(budgets, [3]);
  });
});
