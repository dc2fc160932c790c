// openai-node's zod helpers, unmodified, against the server: they send schemas that declare
// "$schema": "http://json-schema.org/draft-07/schema#", which the server once refused with a 400.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import type { Engine, GenerationEvent } from '../engines/engine.ts';
import { startTestServer, TEST_KEY, type TestServer } from '../testing/test-server.ts';

const usage = { promptTokens: 5, completionTokens: 5 };

/** Answers like a model that follows the request: JSON for a schema, a tool call, then text once the tool answered. */
const following: Engine = {
  description: 'follows the request',
  async *generate(request): AsyncGenerator<GenerationEvent> {
    if (request.output.kind === 'json') {
      yield { type: 'content', text: '{"city":"Paris","temperature":21}' };
    } else if (request.tools.length > 0 && request.messages.at(-1)?.role !== 'tool') {
      yield { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
      yield { type: 'done', finishReason: 'tool_calls', usage };
      return;
    } else {
      yield { type: 'content', text: `It is ${request.messages.at(-1)?.content} in Paris.` };
    }
    yield { type: 'done', finishReason: 'stop', usage };
  },
};

describe('openai-node zod helpers', () => {
  let server: TestServer;
  let client: OpenAI;
  before(async () => {
    server = await startTestServer({ engine: following });
    client = new OpenAI({ baseURL: server.baseUrl, apiKey: TEST_KEY, maxRetries: 0 });
  });
  after(() => server.close());

  const Weather = z.object({ city: z.string(), temperature: z.number() });

  it('chat.completions.parse with zodResponseFormat gets a parsed object', async () => {
    const completion = await client.chat.completions.parse({
      model: 'service', messages: [{ role: 'user', content: 'Weather in Paris as JSON' }],
      response_format: zodResponseFormat(Weather, 'weather'),
    });
    assert.deepEqual(completion.choices[0]?.message.parsed, { city: 'Paris', temperature: 21 });
  });

  it('runTools with zodFunction calls the function and gets the final answer', async () => {
    const calls: unknown[] = [];
    const runner = client.chat.completions.runTools({
      model: 'service', messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [zodFunction({ name: 'get_weather', parameters: z.object({ city: z.string() }), function: (args) => (calls.push(args), '21 degrees') })],
    });
    assert.equal(await runner.finalContent(), 'It is 21 degrees in Paris.');
    assert.deepEqual(calls, [{ city: 'Paris' }]);
  });
});
