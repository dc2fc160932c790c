// The Prism mock at MOCK_BASE_URL, driven by the generated client as a frontend team would.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createChatCompletion, createServiceClient, streamChatCompletion } from '../client/index.ts';
import { assertMatchesSchema } from './contract-schemas.ts';
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
});
