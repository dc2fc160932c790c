// The specification's table rows that no wider check grades (§2.2 Message, §2.3 content parts,
// §2.4 ResponseFormat, §2.5 Tool, §4's Content-Type), each by one small request. Every accepted
// request asks for few tokens, so a run on a small local model stays fast.
import { ask, type Check, expect, expectEnvelope, type Json, offered } from './checks.ts';

/** A 1×1 PNG, as a base64 data URL (§2.3's form for an image). */
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } }, required: ['city'] } } };
const NOTE = `data:text/plain;base64,${Buffer.from('Buy milk and bread.').toString('base64')}`;

const said = (answer: { status: number; text: string }, what: string) => `${what} was answered ${answer.status}: ${answer.text.slice(0, 200)}`;

/** 200 with an assistant message: the request was accepted and answered. */
function expectAnswered(answer: { status: number; text: string; json: unknown }, what: string): void {
  expect(answer.status === 200, said(answer, what));
  expect((answer.json as Json)?.choices?.[0]?.message?.role === 'assistant', `${what}: the answer has no assistant message`);
}

/** Each body must be refused with 400 invalid_request_error in the envelope. */
async function expectRefused(probe: Parameters<Check['run']>[0], cases: [string, object][]): Promise<void> {
  for (const [what, body] of cases) {
    const answer = await probe.complete(body);
    expect(answer.status === 400, said(answer, what));
    expectEnvelope(answer, 400, 'invalid_request_error');
  }
}

export const ROW_CHECKS: Check[] = [
  {
    id: 'message-roles', title: 'system, user and assistant messages are accepted; a role outside the four is refused with 400', rules: ['§2.2 role', '§7 400'], group: 'core',
    async run(probe, { model }) {
      expectAnswered(await probe.complete({ model, max_tokens: 4, messages: [
        { role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Say hello.' },
      ] }), 'a system, user, assistant, user history');
      await expectRefused(probe, [['a message with role "robot"', { model, max_tokens: 4, messages: [{ role: 'robot', content: 'Say hello.' }] }]]);
    },
  },
  {
    id: 'content-required', title: 'A user message without content is refused with 400', rules: ['§2.2 content', '§7 400'], group: 'core',
    async run(probe, { model }) {
      await expectRefused(probe, [['a user message without content', { model, max_tokens: 4, messages: [{ role: 'user' }] }]]);
    },
  },
  {
    id: 'text-parts', title: 'content as an array of text parts is accepted', rules: ['§2.2 content', '§2.3 text'], group: 'core',
    async run(probe, { model }) {
      expectAnswered(await probe.complete({ model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: 'Say' }, { type: 'text', text: 'hello.' }] }] }),
        'content [{type: text}, {type: text}]');
    },
  },
  {
    id: 'message-name', title: 'A message with a name is accepted', rules: ['§2.2 name'], group: 'core',
    async run(probe, { model }) {
      expectAnswered(await probe.complete({ model, max_tokens: 4, messages: [{ role: 'user', name: 'alice', content: 'Say hello.' }] }), 'a user message with name "alice"');
    },
  },
  {
    id: 'assistant-tool-calls', title: 'An assistant message holding tool_calls, then the tool\'s result, is answered', rules: ['§2.2 tool_calls'], group: 'core',
    async run(probe, { model }) {
      const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
      expectAnswered(await probe.complete({ model, max_tokens: 4, tools: [WEATHER], messages: [
        { role: 'user', content: 'What is the weather in Paris?' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":21}' },
      ] }), 'an assistant message with tool_calls and the tool result');
    },
  },
  {
    id: 'tool-message-id', title: 'A tool message without tool_call_id is refused with 400', rules: ['§2.2 tool_call_id', '§7 400'], group: 'core',
    async run(probe, { model }) {
      const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
      await expectRefused(probe, [['a tool message without tool_call_id', { model, max_tokens: 4, messages: [
        { role: 'user', content: 'What is the weather in Paris?' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', content: '{"temperature":21}' },
      ] }]]);
    },
  },
  {
    id: 'image-part', title: 'An image_url part (a PNG data URL) is answered, or refused with a 400 in the envelope where not offered', rules: ['§2.3 image_url'], group: 'core',
    async run(probe, { model }) {
      const answer = await probe.complete({ model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: PNG } }] }] });
      offered(answer, 'an image_url part');
      expectAnswered(answer, 'an image_url part');
    },
  },
  {
    id: 'file-part', title: 'A file part (a text file as a data URL) is answered, or refused with a 400 in the envelope where not offered', rules: ['§2.3 file'], group: 'core',
    async run(probe, { model }) {
      const answer = await probe.complete({ model, max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarise.' }, { type: 'file', file: { filename: 'notes.txt', file_data: NOTE } }] }] });
      offered(answer, 'a file part');
      expectAnswered(answer, 'a file part');
    },
  },
  {
    id: 'response-format-text', title: 'response_format {type: text} is answered with text', rules: ['§2.4 type'], group: 'core',
    async run(probe, { model }) {
      const answer = await probe.complete(ask(model, { max_tokens: 4, response_format: { type: 'text' } }));
      expectAnswered(answer, 'response_format {type: text}');
      const content = (answer.json as Json).choices[0].message.content;
      expect(typeof content === 'string', `with response_format text, message.content is ${JSON.stringify(content)}, not a string`);
    },
  },
  {
    id: 'response-format-invalid', title: 'json_schema without its object, or without a name, is refused with 400', rules: ['§2.4 json_schema', '§2.4 json_schema.name', '§7 400'], group: 'core',
    async run(probe, { model }) {
      await expectRefused(probe, [
        ['response_format {type: json_schema} without json_schema', ask(model, { max_tokens: 4, response_format: { type: 'json_schema' } })],
        ['a json_schema without a name', ask(model, { max_tokens: 4, response_format: { type: 'json_schema', json_schema: { schema: { type: 'object' } } } })],
      ]);
    },
  },
  {
    id: 'tool-definition', title: 'A tool whose type is not function, without function, or without a name is refused with 400', rules: ['§2.5 type', '§2.5 function', '§2.5 function.name', '§7 400'], group: 'core',
    async run(probe, { model }) {
      await expectRefused(probe, [
        ['a tool of type "retrieval"', ask(model, { max_tokens: 4, tools: [{ type: 'retrieval', function: { name: 'get_weather' } }] })],
        ['a tool without function', ask(model, { max_tokens: 4, tools: [{ type: 'function' }] })],
        ['a tool whose function has no name', ask(model, { max_tokens: 4, tools: [{ type: 'function', function: { description: 'The weather' } }] })],
      ]);
    },
  },
  {
    id: 'tool-no-description', title: 'A tool without a description is accepted', rules: ['§2.5 function.description'], group: 'core',
    async run(probe, { model }) {
      // Whether the model calls it is its own choice: graded is that the tool is accepted.
      const tool = { type: 'function', function: { name: 'get_weather', parameters: WEATHER.function.parameters } };
      const answer = await probe.complete({ model, max_tokens: 48, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [tool] });
      expect(answer.status === 200, said(answer, 'a tool without a description'));
    },
  },
  {
    id: 'tool-no-parameters', title: 'A function without parameters can be called (its arguments a JSON object)', rules: ['§2.5 function.parameters'], group: 'core',
    async run(probe, { model }) {
      const tools = [{ type: 'function', function: { name: 'get_time', description: 'The current time' } }];
      // 48 like tool-flow: an engine may spend part of max_tokens choosing the tool before its arguments.
      const answer = await probe.complete({ model, max_tokens: 48, messages: [{ role: 'user', content: 'What time is it?' }], tools, tool_choice: 'required' });
      expect(answer.status === 200, said(answer, 'a tool without parameters'));
      const call = (answer.json as Json)?.choices?.[0]?.message?.tool_calls?.[0];
      expect(call?.function?.name === 'get_time', `tool_choice required with one function get_time: the call is ${JSON.stringify(call)}`);
      const args = (() => { try { return JSON.parse(call.function.arguments); } catch { return undefined; } })();
      expect(args !== null && typeof args === 'object' && !Array.isArray(args), `the arguments ${JSON.stringify(call.function.arguments)} are not a JSON object`);
    },
  },
  {
    id: 'content-type-charset', title: 'Content-Type: application/json; charset=utf-8 is a JSON body', rules: ['§4 Content-Type'], group: 'core',
    async run(probe, { model }) {
      expectAnswered(await probe.complete(ask(model, { max_tokens: 4 }), { headers: { 'Content-Type': 'application/json; charset=utf-8' } }), 'Content-Type: application/json; charset=utf-8');
    },
  },
];
