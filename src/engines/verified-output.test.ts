import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Engine, GenerationEvent } from './engine.ts';
import { ServiceError } from '../errors/service-error.ts';
import { foldEvents } from './fold-events.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import { withVerifiedOutput } from './verified-output.ts';
import { moduleUrl, runInChild, TICKER } from '../testing/in-child.ts';

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

// The answer of an upstream is checked on the event loop against the caller's schema: a pattern
// that backtracks would hold every other request. Run in a child so the hang detector can end it.
describe('withVerifiedOutput and caller patterns', () => {
  it('refuses arguments and content that a backtracking pattern would hang on, and the event loop turns meanwhile', { timeout: 300_000 }, async () => {
    const hostile = `${'a'.repeat(40)}!`;
    const result = await runInChild(`${TICKER}
      const { normalizeRequest } = await import(${moduleUrl('../chat/normalize-request.ts', import.meta.url)});
      const { withVerifiedOutput } = await import(${moduleUrl('./verified-output.ts', import.meta.url)});
      const { foldEvents } = await import(${moduleUrl('./fold-events.ts', import.meta.url)});
      const hostile = ${JSON.stringify(JSON.stringify({ s: hostile }))};
      const usage = { promptTokens: 1, completionTokens: 1 };
      const toolEngine = { description: 'tool', async *generate() {
        yield { type: 'tool_call', index: 0, id: 'c', name: 'f', arguments: hostile };
        yield { type: 'done', finishReason: 'tool_calls', usage };
      } };
      const jsonEngine = { description: 'json', async *generate() {
        yield { type: 'content', text: hostile };
        yield { type: 'done', finishReason: 'stop', usage };
      } };
      const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a|a)*$' } } };
      const signal = new AbortController().signal;
      const outcome = (p) => foldEvents(p).then(() => 'answered', (e) => e.code);
      const tools = await outcome(withVerifiedOutput(toolEngine).generate(normalizeRequest({ model: 'service', messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f', parameters: schema } }], tool_choice: 'required' }, signal)));
      await nextTurn();
      const json = await outcome(withVerifiedOutput(jsonEngine).generate(normalizeRequest({ model: 'service', messages: [{ role: 'user', content: 'x' }],
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } }, signal)));
      stopTicking();
      console.log(JSON.stringify({ tools, json, ticks: ticks() }));`) as { tools: string; json: string; ticks: number };
    assert.deepEqual([result.tools, result.json], ['output_validation_failed', 'output_validation_failed']);
    assert.ok(result.ticks >= 1, `${result.ticks} turns`);
  });

  it('refuses, 400, tools whose schemas together pass the request\'s schema budget', () => {
    const parameters = { type: 'object', properties: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    const tools = Array.from({ length: 3 }, (_, i) => ({ type: 'function', function: { name: `f${i}`, parameters } }));
    const request = { model: 'service', messages: [{ role: 'user', content: 'x' }], tools } as never;
    assert.equal(normalizeRequest(request, new AbortController().signal).tools.length, 3);
    assert.throws(() => normalizeRequest(request, new AbortController().signal, { maxBytes: 100_000, maxDepth: 16, maxKeywords: 50 }),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && e.code === 'invalid_json_schema' && e.param === 'tools[2].function.parameters');
  });
});
