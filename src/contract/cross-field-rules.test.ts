// The request rules across fields, as openapi.yaml states them in JSON Schema (if/then): one
// table of cases judged by the contract alone (Ajv, as a generator or Schemathesis reads it) and
// by the server (express-openapi-validator, then chat/normalize-request.ts), so that the two
// cannot disagree (issue 21, finding 2).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { loadContract } from './openapi-document.ts';
import { postCompletion, startTestServer, type TestServer } from '../testing/test-server.ts';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addKeyword('discriminator').addKeyword('example');
ajv.addSchema(loadContract(), 'openapi.yaml');
const validRequest = ajv.getSchema('openapi.yaml#/components/schemas/ChatCompletionRequest')!;

const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } };
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
const base = (messages: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'service', messages, ...extra });
const user = { role: 'user', content: 'weather?' };

const cases: [string, unknown, boolean][] = [
  ['an assistant turn with tool_calls and content null', base([user, { role: 'assistant', content: null, tool_calls: [call] }]), true],
  ['an assistant turn with tool_calls and no content (LiteLLM)', base([user, { role: 'assistant', tool_calls: [call] }]), true],
  ['an assistant turn with neither content nor tool_calls', base([user, { role: 'assistant' }]), false],
  ['an assistant turn with content null and an empty tool_calls', base([user, { role: 'assistant', content: null, tool_calls: [] }]), false],
  ['a user turn with content null', base([{ role: 'user', content: null }]), false],
  ['a user turn without content', base([{ role: 'user' }]), false],
  ['a tool turn with its tool_call_id', base([user, { role: 'assistant', tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }]), true],
  ['a tool turn without tool_call_id', base([user, { role: 'tool', content: 'sunny' }]), false],
  ['tool_choice required with tools', base([user], { tools, tool_choice: 'required' }), true],
  ['tool_choice required without tools', base([user], { tool_choice: 'required' }), false],
  ['tool_choice required with tools null', base([user], { tools: null, tool_choice: 'required' }), false],
  ['tool_choice required with an empty tools', base([user], { tools: [], tool_choice: 'required' }), false],
  ['a named tool_choice without tools', base([user], { tool_choice: { type: 'function', function: { name: 'get_weather' } } }), false],
  ['tool_choice auto or none without tools', base([user], { tool_choice: 'none' }), true],
  ['stream_options with stream true', base([user], { stream: true, stream_options: { include_usage: true } }), true],
  ['stream_options without stream', base([user], { stream_options: { include_usage: true } }), false],
  ['stream_options with stream false', base([user], { stream: false, stream_options: {} }), false],
  ['stream_options null without stream', base([user], { stream_options: null }), true],
];

describe('openapi.yaml states the request rules across fields', () => {
  for (const [name, body, valid] of cases) {
    it(`${valid ? 'accepts' : 'refuses'} ${name}`, () => {
      assert.equal(validRequest(body), valid, JSON.stringify(validRequest.errors));
    });
  }
});

describe('the server agrees with the contract on each of them', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());
  for (const [name, body, valid] of cases) {
    it(`${valid ? 'accepts' : 'refuses with 400'} ${name}`, async () => {
      const res = await postCompletion(server.baseUrl, body);
      const text = await res.text();
      // Accepted: anything but a 400 (a scripted engine may not make the tool call asked for).
      if (valid) assert.notEqual(res.status, 400, text);
      else assert.equal(res.status, 400, text);
    });
  }
});
