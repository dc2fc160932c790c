// Conformance of any implementation at SERVICE_BASE_URL (with SERVICE_API_KEY): every answer is
// checked against openapi.yaml itself. Requests are kept small so a real model answers quickly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createChatCompletion, createServiceClient, ServiceResponseError, streamChatCompletion } from '../client/index.ts';
import { assertMatchesSchema } from './contract-schemas.ts';
import { target } from './target.ts';

const { baseUrl, apiKey } = target('SERVICE_BASE_URL');
const client = createServiceClient({ baseUrl, apiKey });
const question = { model: 'service' as const, messages: [{ role: 'user' as const, content: 'Say hello.' }], max_tokens: 8 };

describe(`conformance of ${baseUrl}`, () => {
  it('answers a completion that matches ChatCompletionResponse', async () => {
    const completion = await createChatCompletion(client, question);
    assertMatchesSchema('ChatCompletionResponse', completion);
    assert.equal(completion.model, 'service');
  });

  it('echoes the other spelling of the model id', async () => {
    const completion = await createChatCompletion(client, { ...question, model: 'service-beta' });
    assert.equal(completion.model, 'service-beta');
  });

  it('streams chunks that match ChatCompletionChunk, one id, role first, finish_reason last', async () => {
    const chunks = [];
    for await (const chunk of streamChatCompletion(client, { ...question, stream_options: { include_usage: true } })) {
      assertMatchesSchema('ChatCompletionChunk', chunk);
      chunks.push(chunk);
    }
    assert.ok(chunks.length >= 3);
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
    assert.equal(chunks[0]?.choices[0]?.delta.role, 'assistant');
    const withChoices = chunks.filter((c) => c.choices.length > 0);
    assert.ok(withChoices.slice(0, -1).every((c) => c.choices[0]?.finish_reason === null));
    assert.ok(withChoices.at(-1)?.choices[0]?.finish_reason);
    const usage = chunks.at(-1)?.usage;
    assert.ok(usage && usage.total_tokens === usage.prompt_tokens + usage.completion_tokens);
  });

  it('ends the raw event stream with data: [DONE]', async () => {
    const res = await fetch(`${baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...question, stream: true }),
    });
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = (await res.text()).split(/\n\n/).filter((e) => e.trim() !== '');
    assert.equal(events.at(-1)?.trim(), 'data: [DONE]');
  });

  it('accepts unknown extra fields', async () => {
    const body = { ...question, logprobs: false as const, metadata: { team: 'a' }, some_future_field: [1] };
    const { response } = await client.POST('/chat/completions', { body });
    assert.equal(response.status, 200);
  });

  it('answers a bad key with 401 authentication_error in the envelope', async () => {
    const bad = createServiceClient({ baseUrl, apiKey: 'not-a-key' });
    const { error, response } = await bad.POST('/chat/completions', { body: question });
    assert.equal(response.status, 401);
    assertMatchesSchema('ErrorEnvelope', error);
    assert.equal(error?.error.type, 'authentication_error');
  });

  it('answers schema violations with 400 invalid_request_error naming the field', async () => {
    for (const [body, field] of [
      [{ model: 'service' }, 'messages'],
      [{ ...question, temperature: 3 }, 'temperature'],
      [{ ...question, max_tokens: 0 }, 'max_tokens'],
      [{ ...question, model: 'gpt-4' }, 'model'],
    ] as const) {
      const { error, response } = await client.POST('/chat/completions', { body: body as never });
      assert.equal(response.status, 400, JSON.stringify(body));
      assertMatchesSchema('ErrorEnvelope', error);
      assert.equal(error?.error.type, 'invalid_request_error');
      assert.match(error?.error.message ?? '', new RegExp(field));
    }
  });

  it('reports a stream refused before it starts as a ServiceResponseError', async () => {
    const bad = createServiceClient({ baseUrl, apiKey: 'not-a-key' });
    await assert.rejects(async () => {
      for await (const _ of streamChatCompletion(bad, question)) void _;
    }, (e: unknown) => e instanceof ServiceResponseError && e.status === 401);
  });
});
