// Generation features of any implementation at SERVICE_BASE_URL, driven by real, unmodified
// clients: the official openai SDK and the Vercel AI SDK's OpenAI-compatible provider. Answers come
// from a real model, so assertions check the contract (shapes, schemas, finish reasons, ids), not
// wording. Decoding is greedy (temperature 0) except where sampling is the point, so a small
// model's answers repeat and the suite cannot flake on a sampled empty answer.
// SERVICE_CONTEXT_WINDOW, when set, names the deployment's context window in tokens.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { extractReasoningMiddleware, generateText, jsonSchema, Output, streamText, tool, wrapLanguageModel } from 'ai';
import { Ajv2020 } from 'ajv/dist/2020.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
const openai = new OpenAI({ baseURL: baseUrl, apiKey, maxRetries: 0 });
const vercel = createOpenAICompatible({ name: 'service', baseURL: baseUrl, apiKey, includeUsage: true, supportsStructuredOutputs: true });
const ajv = new Ajv2020({ strict: false });

const capitalSchema = {
  type: 'object',
  properties: { country: { type: 'string' }, capital: { type: 'string' } },
  required: ['country', 'capital'],
  additionalProperties: false,
};
const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};
const timeTool = {
  type: 'function' as const,
  function: { name: 'get_time', description: 'Current time in a time zone', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } },
};
const user = (content: string) => [{ role: 'user' as const, content }];

describe(`generation at ${baseUrl}, official openai SDK`, () => {
  it('answers with content, a finish reason and usage', async () => {
    const completion = await openai.chat.completions.create({ model: 'service', temperature: 0, messages: user('What is the capital of France?'), max_tokens: 16 });
    const choice = completion.choices[0]!;
    assert.ok(choice.message.content && choice.message.content.length > 0);
    assert.ok(['stop', 'length'].includes(choice.finish_reason));
    const usage = completion.usage!;
    assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0 && usage.completion_tokens <= 16);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  });

  it('counts more prompt tokens for a longer prompt', async () => {
    const short = await openai.chat.completions.create({ model: 'service', temperature: 0, messages: user('Hi'), max_tokens: 1 });
    const long = await openai.chat.completions.create({ model: 'service', temperature: 0, messages: user('Hi '.repeat(50)), max_tokens: 1 });
    assert.ok(long.usage!.prompt_tokens >= short.usage!.prompt_tokens + 40);
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const completion = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Write a long story about a dragon and a knight.'), max_tokens: 3,
    });
    assert.equal(completion.choices[0]!.finish_reason, 'length');
    assert.ok(completion.usage!.completion_tokens <= 3);
  });

  it('honours stop sequences: the text ends before the stop string, finish_reason stop', async () => {
    const completion = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Write one sentence about the sea.'), max_tokens: 40, stop: ['e'],
    });
    assert.doesNotMatch(completion.choices[0]!.message.content ?? '', /e/);
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
  });

  it('gives the same answer for the same seed', async () => {
    const ask = () => openai.chat.completions.create({
      model: 'service', messages: user('Name a color.'), max_tokens: 12, temperature: 1.5, seed: 1234,
    });
    const first = await ask();
    const second = await ask();
    assert.equal(first.choices[0]!.message.content, second.choices[0]!.message.content);
  });

  it('streams: role on the first delta, text in deltas, usage at the end', async () => {
    const stream = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Say hello.'), max_tokens: 12, stream: true, stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.ok(text.length > 0);
    assert.ok(chunks.at(-1)!.usage!.completion_tokens > 0);
  });

  it('answers json_schema output with JSON that validates', async () => {
    const completion = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Give the capital of France.'), max_tokens: 60,
      response_format: { type: 'json_schema', json_schema: { name: 'capital', schema: capitalSchema, strict: true } },
    });
    const content = completion.choices[0]!.message.content!;
    assert.equal(completion.choices[0]!.finish_reason, 'stop');
    assert.ok(ajv.validate(capitalSchema, JSON.parse(content)), content);
  });

  it('refuses an invalid JSON Schema with 400', async () => {
    await assert.rejects(openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('x'),
      response_format: { type: 'json_schema', json_schema: { name: 'bad', schema: { type: 'no-such-type' } } },
    }), (e: unknown) => e instanceof OpenAI.BadRequestError && /JSON Schema/.test(e.message));
  });

  it('calls a tool when required: unique id, arguments that validate, finish_reason tool_calls', async () => {
    const completion = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('What is the weather in Paris?'), max_tokens: 40,
      tools: [weatherTool, timeTool], tool_choice: 'required',
    });
    const choice = completion.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    const calls = choice.message.tool_calls!;
    assert.ok(calls.length >= 1);
    assert.equal(new Set(calls.map((c) => c.id)).size, calls.length);
    for (const call of calls) {
      assert.equal(call.type, 'function');
      if (call.type !== 'function') continue;
      const spec = [weatherTool, timeTool].find((t) => t.function.name === call.function.name)!;
      assert.ok(ajv.validate(spec.function.parameters, JSON.parse(call.function.arguments)), call.function.arguments);
    }
  });

  it('calls the named function, and none with tool_choice none', async () => {
    const named = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('What time is it in Tokyo?'), max_tokens: 40,
      tools: [weatherTool, timeTool], tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    const call = named.choices[0]!.message.tool_calls![0]!;
    assert.equal(call.type === 'function' && call.function.name, 'get_time');
    const none = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('What time is it in Tokyo?'), max_tokens: 12, tools: [weatherTool, timeTool], tool_choice: 'none',
    });
    assert.equal(none.choices[0]!.message.tool_calls, undefined);
    assert.notEqual(none.choices[0]!.finish_reason, 'tool_calls');
  });

  it('answers the tool result in a following turn (a full round trip)', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = user('What is the weather in Paris?');
    const first = await openai.chat.completions.create({ model: 'service', temperature: 0, messages, max_tokens: 40, tools: [weatherTool], tool_choice: 'required' });
    const assistant = first.choices[0]!.message;
    messages.push(assistant);
    messages.push({ role: 'tool', tool_call_id: assistant.tool_calls![0]!.id, content: '{"temperature_c":18,"sky":"cloudy"}' });
    const second = await openai.chat.completions.create({ model: 'service', temperature: 0, messages, max_tokens: 24, tools: [weatherTool], tool_choice: 'none' });
    assert.ok((second.choices[0]!.message.content ?? '').length > 0);
  });

  it('streams tool calls: the first delta of a call has id, type and name, then argument fragments', async () => {
    const stream = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('What is the weather in Paris?'), max_tokens: 40, stream: true,
      tools: [weatherTool], tool_choice: 'required',
    });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.ok(deltas[0]?.id && deltas[0].type === 'function' && deltas[0].function?.name === 'get_weather');
    const args = deltas.filter((d) => d.index === deltas[0]!.index).map((d) => d.function?.arguments ?? '').join('');
    assert.ok(ajv.validate(weatherTool.function.parameters, JSON.parse(args)), args);
    assert.equal(finish, 'tool_calls');
  });

  it('refuses a tool_choice naming an unknown function, and a tool message answering no call', async () => {
    await assert.rejects(openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('x'), tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } },
    }), OpenAI.BadRequestError);
    await assert.rejects(openai.chat.completions.create({
      model: 'service', temperature: 0, messages: [...user('x'), { role: 'tool', tool_call_id: 'call_unknown', content: '1' }],
    }), OpenAI.BadRequestError);
  });

  it('returns the reasoning trace with reasoning_effort, and streams it first inside <think> tags', async () => {
    const completion = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Is 17 a prime number?'), max_tokens: 40, reasoning_effort: 'low',
    });
    const reasoning = (completion as unknown as { reasoning?: string }).reasoning;
    assert.ok(typeof reasoning === 'string' && reasoning.length > 0);
    assert.ok((completion.choices[0]!.message.content ?? '').length > 0);

    const stream = await openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('Is 17 a prime number?'), max_tokens: 40, reasoning_effort: 'low', stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.match(text, /^<think>[\s\S]+<\/think>[\s\S]+$/);
  });

  it('refuses input plus max_tokens beyond the context window with 400 context_length_exceeded', { skip: !process.env.SERVICE_CONTEXT_WINDOW }, async () => {
    const window = Number(process.env.SERVICE_CONTEXT_WINDOW);
    await assert.rejects(openai.chat.completions.create({
      model: 'service', temperature: 0, messages: user('word '.repeat(window)), max_tokens: 100,
    }), (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
    const bounded = await openai.chat.completions.create({ model: 'service', temperature: 0, messages: user('Hi'), max_tokens: 32000, stop: ['.'] });
    assert.ok(bounded.choices[0]!.message.content !== null, 'the largest max_tokens is bounded by the window, not refused');
  });
});

describe(`generation at ${baseUrl}, Vercel AI SDK`, () => {
  const model = vercel('service');

  it('generates and streams text', async () => {
    const { text, usage } = await generateText({ model, prompt: 'Say hello.', temperature: 0, maxOutputTokens: 12 });
    assert.ok(text.length > 0);
    assert.ok((usage.outputTokens ?? 0) > 0);
    const result = streamText({ model, prompt: 'Say hello.', temperature: 0, maxOutputTokens: 12 });
    let streamed = '';
    for await (const part of result.textStream) streamed += part;
    assert.ok(streamed.length > 0);
  });

  it('generates an object under a JSON schema', async () => {
    const { output } = await generateText({
      model, prompt: 'Give the capital of France.', temperature: 0, maxOutputTokens: 60,
      output: Output.object({ schema: jsonSchema<{ country: string; capital: string }>(capitalSchema as never) }),
    });
    assert.ok(ajv.validate(capitalSchema, output));
  });

  it('does a tool-call round trip', async () => {
    let calledWith: unknown;
    const tools = {
      get_weather: tool({
        description: 'Current weather for a city',
        inputSchema: jsonSchema<{ city: string }>(weatherTool.function.parameters as never),
        execute: async (input) => {
          calledWith = input;
          return { temperature_c: 18, sky: 'cloudy' };
        },
      }),
    };
    const first = await generateText({ model, prompt: 'What is the weather in Paris?', tools, toolChoice: 'required', temperature: 0, maxOutputTokens: 40 });
    assert.equal(first.toolCalls[0]?.toolName, 'get_weather');
    assert.ok(ajv.validate(weatherTool.function.parameters, calledWith));
    const second = await generateText({
      model, tools, toolChoice: 'none', temperature: 0, maxOutputTokens: 24,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }, ...first.response.messages],
    });
    assert.ok(second.text.length > 0);
  });

  it('separates streamed reasoning with its <think> middleware', async () => {
    const thinking = wrapLanguageModel({ model, middleware: extractReasoningMiddleware({ tagName: 'think' }) });
    const result = streamText({ model: thinking, prompt: 'Is 17 a prime number?', temperature: 0, maxOutputTokens: 40, providerOptions: { service: { reasoningEffort: 'low' } } });
    let text = '';
    for await (const part of result.textStream) text += part;
    const reasoning = await result.reasoningText;
    assert.ok(reasoning && reasoning.length > 0, 'reasoning arrived inside <think> tags');
    assert.ok(text.length > 0 && !text.includes('<think>'));
  });
});
