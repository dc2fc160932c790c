// The mock at MOCK_BASE_URL (Prism behind its streaming front, src/mock/), driven by the generated
// client and the official openai SDK as a frontend team would.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { createChatCompletion, createServiceClient, streamChatCompletion } from '../client/index.ts';
import { assertMatchesSchema } from './contract-schemas.ts';
import { runKit } from './kit/run-kit.ts';
import { target } from './target.ts';

const { baseUrl } = target('MOCK_BASE_URL');
const client = createServiceClient({ baseUrl, apiKey: 'any-key' });
const question = { model: 'service' as const, messages: [{ role: 'user' as const, content: 'Hi' }] };

describe(`the Prism mock at ${baseUrl}`, () => {
  it('answers a JSON completion from the examples', async () => {
    const completion = await createChatCompletion(client, question);
    assertMatchesSchema('ChatCompletionResponse', completion);
    assert.match(completion.choices[0]?.message.content ?? '', /Paris/);
  });

  it('answers a named example on request (Prefer: example=toolCall)', async () => {
    const completion = await createChatCompletion(client, question, { Prefer: 'example=toolCall' });
    assertMatchesSchema('ChatCompletionResponse', completion);
    assert.equal(completion.choices[0]?.finish_reason, 'tool_calls');
  });

  it('streams the streamed example as typed chunks', async () => {
    const chunks = [];
    for await (const chunk of streamChatCompletion(client, question, { Accept: 'text/event-stream' })) {
      assertMatchesSchema('ChatCompletionChunk', chunk);
      chunks.push(chunk);
    }
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    assert.equal(text, 'Hello there!');
    assert.ok(chunks.at(-1)?.usage);
  });

  it('answers an invalid body with 400 in the envelope', async () => {
    const { error, response } = await client.POST('/chat/completions', { body: { model: 'service' } as never });
    assert.equal(response.status, 400);
    assertMatchesSchema('ErrorEnvelope', error);
    assert.equal(error?.error.type, 'invalid_request_error');
  });

  it('answers a request without a key with 401 in the envelope', async () => {
    const anonymous = createServiceClient({ baseUrl });
    const { error, response } = await anonymous.POST('/chat/completions', { body: question });
    assert.equal(response.status, 401);
    assertMatchesSchema('ErrorEnvelope', error);
    assert.equal(error?.error.type, 'authentication_error');
  });

  const openai = new OpenAI({ baseURL: baseUrl, apiKey: 'any-key', maxRetries: 0 });
  /** The SDK's stream, its text and tool-call argument deltas joined. */
  async function streamed(prefer?: string) {
    const stream = await openai.chat.completions.create({ ...question, stream: true }, prefer ? { headers: { Prefer: prefer } } : {});
    let content = '';
    let args = '';
    for await (const chunk of stream) {
      assertMatchesSchema('ChatCompletionChunk', chunk);
      content += chunk.choices[0]?.delta.content ?? '';
      args += chunk.choices[0]?.delta.tool_calls?.map((c) => c.function?.arguments ?? '').join('') ?? '';
    }
    return { content, args };
  }

  it('streams to the official openai SDK, which sends no Accept: text/event-stream', async () => {
    assert.equal((await streamed()).content, 'Hello there!');
  });

  it('streams the tool call and reasoning examples (Prefer: example=toolCall, example=reasoning)', async () => {
    assert.equal((await streamed('example=toolCall')).args, '{"city":"Paris"}');
    assert.match((await streamed('example=reasoning')).content, /^<think>.+<\/think>No\. 1001/);
  });

  it('sends a stream in pieces over time, not as one body', async () => {
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST', headers: { Authorization: 'Bearer any-key', 'Content-Type': 'application/json' }, body: JSON.stringify({ ...question, stream: true }),
    });
    const reads: string[] = [];
    const decoder = new TextDecoder();
    for await (const piece of res.body!) reads.push(decoder.decode(piece as Uint8Array, { stream: true }));
    const events = reads.join('').split('\n\n').filter(Boolean);
    assert.ok(reads.length > 1 && reads[0]!.split('\n\n').filter(Boolean).length < events.length, `${reads.length} reads for ${events.length} events`);
    assert.equal(events.at(-1), 'data: [DONE]');
  });

  it('answers a body that is not JSON with 400 invalid_json in the envelope', async () => {
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST', headers: { Authorization: 'Bearer any-key', 'Content-Type': 'application/json' }, body: '{"model":',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { type: string; code: string } };
    assertMatchesSchema('ErrorEnvelope', body);
    assert.deepEqual([body.error.type, body.error.code], ['invalid_request_error', 'invalid_json']);
  });

  it('is graded by the conformance kit, whose report shows what a mock cannot do: check keys, call tools, follow a request', async () => {
    const result = await runKit({ baseUrl, apiKey: 'any-key', model: 'service', extensions: false, timeoutMs: 60_000 });
    const failed = result.checks.filter((c) => c.status === 'fail').map((c) => c.id);
    // Its answers are fixed examples: no schema, tool choice, max_tokens, stop or logprobs is followed, and
    // every answer and stream has the example's id; its n: 2 is a 400 about something else (a missing messages).
    assert.deepEqual(failed, ['completion-ids', 'bad-key', 'tool-flow', 'tool-no-parameters', 'json-schema', 'tool-choice', 'stream-tool-args', 'max-tokens-length',
      'stop-sequence', 'unicode', 'concurrent-streams', 'headers', 'logprobs', 'top-logprobs', 'n-choices']);
    // A check fails only the rules its failure concerns: a 200 for a bad key fails the 401 rows, not the
    // envelope's (§2.9); no tool call fails the tool flow, and leaves the ToolCall rows (§2.7) ungraded.
    assert.deepEqual(result.rules.filter((r) => r.status === 'fail').map((r) => r.rule.id), ['§2.1 response_format', '§2.1 tools', '§2.1 tool_choice',
      '§2.4 json_schema.schema', '§2.4 json_schema.strict', '§2.5 function.parameters', '§2.6 required', '§2.8 id', '§4 Authorization', '§4.5', '§5.3', '§5.4',
      '§6.2', '§6.3', '§7 401']);
    assert.equal(result.scores.core.percent, 86.7);
  });
});
