// What users of OpenAI-compatible servers report most (each a known complaint against Ollama, vLLM
// or LiteLLM), graded on any server. A feature refused with a 400 in the envelope is "not offered";
// answering without it, as if it had been honoured, fails.
import { type Check, CheckFailure, type CheckContext, expect, expectEnvelope, type Json, NotApplicable, offered, streamed } from './checks.ts';
import { jsonSchemaProblem } from './contract.ts';

const show = (value: unknown, max = 120) => {
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

// Arguments from enums: a small local model can fill a free string until max_tokens, which cuts the
// call (finish_reason length) and grades the model's brevity instead of the server's tool handling.
const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome', 'London'] } }, required: ['city'] } } };
const TIME = { type: 'function', function: { name: 'get_time', description: 'The time in a timezone', parameters: { type: 'object', properties: { timezone: { type: 'string', enum: ['Europe/Paris', 'UTC'] } }, required: ['timezone'] } } };
const QUESTION = { role: 'user', content: 'What is the weather in Paris?' };

// Enums and a boolean, not free strings: a small local model fills a free string until max_tokens,
// and the check grades the server's schema handling, not the model's brevity.
const PLACE = { type: 'object', properties: { country: { type: 'string', enum: ['France', 'Italy', 'Spain'] }, is_capital: { type: 'boolean' } }, required: ['country', 'is_capital'], additionalProperties: false };
/** Multi-byte UTF-8 of 2, 3 and 4 bytes; an enum makes the model's answer exact. */
const WORD = 'café 東京 🎉';
const WORD_SCHEMA = { type: 'object', properties: { word: { type: 'string', enum: [WORD] } }, required: ['word'], additionalProperties: false };

const parseJson = (text: unknown): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(String(text)) };
  } catch {
    return { ok: false };
  }
};

const contentOf = (chunks: Json[]) => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

/** The tool calls of a stream, their deltas joined by index. */
function streamedCalls(chunks: Json[]): { id?: string; name?: string; arguments: string }[] {
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  for (const c of chunks) {
    for (const d of (c.choices?.[0]?.delta?.tool_calls ?? []) as Json[]) {
      const call = (calls[d.index ?? 0] ??= { arguments: '' });
      if (d.id) call.id = d.id;
      if (d.function?.name) call.name = (call.name ?? '') + d.function.name;
      if (typeof d.function?.arguments === 'string') call.arguments += d.function.arguments;
    }
  }
  return calls;
}

export const COMPAT_CHECKS: Check[] = [
  {
    id: 'json-schema', title: 'response_format json_schema answers parse and validate against the schema, strict too', rules: ['§2.1 response_format', '§2.4 json_schema.schema', '§2.4 json_schema.strict'], group: 'compat',
    async run(probe, { model }) {
      for (const strict of [false, true]) {
        const answer = await probe.complete({ model, max_tokens: 64, messages: [{ role: 'user', content: 'In which country is Paris, and is it the capital?' }],
          response_format: { type: 'json_schema', json_schema: { name: 'place', strict, schema: PLACE } } });
        offered(answer, `response_format json_schema (strict ${strict})`);
        const choice = (answer.json as Json)?.choices?.[0];
        expect(choice?.finish_reason === 'stop', `strict ${strict}: finish_reason is ${show(choice?.finish_reason)}, not stop (the JSON may be cut)`);
        const parsed = parseJson(choice.message?.content);
        expect(parsed.ok, `strict ${strict}: the content is not JSON: ${show(choice.message?.content)}`);
        const problem = jsonSchemaProblem(PLACE, parsed.value);
        expect(!problem, `strict ${strict}: the content ${show(parsed.value)} does not validate against the schema: ${problem}`);
      }
    },
  },
  {
    id: 'tool-choice', title: 'tool_choice auto is answered (a call or text), none gives no call, required a call, a named function that function',
    rules: ['§4.5', '§2.1 tool_choice', '§2.6 auto', '§2.6 none', '§2.6 required', '§2.6 named'], group: 'compat',
    async run(probe, { model }) {
      // A call needs room for its arguments; an answer without one only needs to show it made none.
      const ask = async (toolChoice: unknown) => {
        const answer = await probe.complete({ model, max_tokens: toolChoice === 'none' ? 8 : 48, messages: [QUESTION], tools: [WEATHER, TIME], tool_choice: toolChoice });
        // auto is the default (§2.6): a server with tools cannot be without it, so a refusal fails.
        if (toolChoice === 'auto') expect(answer.status === 200, `tool_choice "auto" was answered ${answer.status}: ${show((answer.json as Json)?.error?.message ?? answer.text)}`, { only: ['§2.6 auto'] });
        offered(answer, `tool_choice ${show(toolChoice)}`);
        return (answer.json as Json)?.choices?.[0] as Json;
      };
      // auto: the model decides; graded is that it is accepted and the answer is one or the other, consistently.
      const auto = await ask('auto');
      const autoCalls = (auto?.message?.tool_calls ?? []) as Json[];
      expect((autoCalls.length > 0) === (auto?.finish_reason === 'tool_calls'),
        `tool_choice "auto" was answered with ${autoCalls.length} call(s) and finish_reason ${show(auto?.finish_reason)}`, { only: ['§2.6 auto'] });
      const none = await ask('none');
      const noneCalls = (none?.message?.tool_calls ?? []) as Json[];
      expect(noneCalls.length === 0 && none?.finish_reason !== 'tool_calls',
        `tool_choice "none" was answered with ${noneCalls.length} call(s) ${show(noneCalls.map((c) => c.function?.name))} and finish_reason ${show(none?.finish_reason)}`,
        { except: ['§2.6 auto', '§2.6 required', '§2.6 named'] });
      const required = await ask('required');
      expect((required?.message?.tool_calls ?? []).length > 0 && required.finish_reason === 'tool_calls',
        `tool_choice "required" was answered without a call: finish_reason ${show(required?.finish_reason)}, content ${show(required?.message?.content)}`,
        { except: ['§2.6 auto', '§2.6 none', '§2.6 named'] });
      const named = await ask({ type: 'function', function: { name: 'get_time' } });
      const names = ((named?.message?.tool_calls ?? []) as Json[]).map((c) => c.function?.name);
      expect(names.length > 0 && names.every((n) => n === 'get_time'), `tool_choice named get_time, but the calls are to ${show(names)}`, { except: ['§2.6 auto', '§2.6 none', '§2.6 required'] });
    },
  },
  {
    id: 'stream-tool-args', title: 'Streamed tool-call deltas join into one call with an id, a name and JSON arguments', rules: [], group: 'compat',
    async run(probe, { model }) {
      const chunks = await streamed(probe, { model, max_tokens: 48, messages: [QUESTION], tools: [WEATHER], tool_choice: 'required' }, {}, 'streamed tool calls');
      const calls = streamedCalls(chunks);
      expect(calls.length > 0, 'no delta carries tool_calls');
      calls.forEach((call, i) => {
        expect(typeof call.id === 'string' && call.id.length > 0, `call ${i} has no id in its deltas`);
        expect(call.name === 'get_weather', `call ${i}'s name joins into ${show(call.name)}, not "get_weather"`);
        const parsed = parseJson(call.arguments);
        expect(parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value),
          `call ${i}'s argument deltas join into ${show(call.arguments)}, which is not one JSON object`);
      });
      const last = chunks.filter((c) => c.choices?.length).at(-1)?.choices[0].finish_reason;
      expect(last === 'tool_calls', `the last finish_reason is ${show(last)}, not tool_calls`);
    },
  },
  {
    id: 'tool-history', title: 'A history with two tool calls in one turn and both results is answered', rules: ['§4.5', '§2.2 tool_calls'], group: 'compat',
    async run(probe, { model }) {
      const calls = [
        { id: 'call_paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_rome', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ];
      const answer = await probe.complete({ model, max_tokens: 4, tools: [WEATHER], messages: [
        { role: 'user', content: 'What is the weather in Paris and in Rome?' },
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: 'call_paris', content: '{"temperature":21}' },
        { role: 'tool', tool_call_id: 'call_rome', content: '{"temperature":25}' },
      ] });
      expect(answer.status === 200, `the history was answered ${answer.status}: ${show((answer.json as Json)?.error?.message ?? answer.text)}`);
      expect((answer.json as Json)?.choices?.[0]?.message?.role === 'assistant', 'the answer has no assistant message');
    },
  },
  {
    id: 'assistant-no-content', title: 'An assistant message with tool_calls and no content field is accepted', rules: ['§4.5'], group: 'compat',
    async run(probe, { model }) {
      const call = { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
      const answer = await probe.complete({ model, max_tokens: 4, tools: [WEATHER], messages: [
        QUESTION, { role: 'assistant', tool_calls: [call] }, { role: 'tool', tool_call_id: 'call_1', content: '{"temperature":21}' },
      ] });
      expect(answer.status === 200, `an assistant message without content was answered ${answer.status}: ${show((answer.json as Json)?.error?.message ?? answer.text)}`);
    },
  },
  {
    id: 'include-usage', title: 'stream_options.include_usage gives one usage chunk, with empty choices, last', rules: [], group: 'compat',
    async run(probe, { model }) {
      const body = { model, max_tokens: 8, messages: [{ role: 'user', content: 'Say hello.' }], stream_options: { include_usage: true } };
      const chunks = await streamed(probe, body, {}, 'stream_options.include_usage');
      const withUsage = chunks.map((c, i) => ({ c, i })).filter(({ c }) => c.usage != null);
      expect(withUsage.length === 1, `${withUsage.length} chunks carry usage (chunks ${show(withUsage.map(({ i }) => i))}), where one is required`);
      const { c, i } = withUsage[0]!;
      expect(Array.isArray(c.choices) && c.choices.length === 0, `the usage chunk has choices ${show(c.choices)}, where they must be empty`);
      expect(i === chunks.length - 1, `the usage chunk is chunk ${i + 1} of ${chunks.length}, not the last before [DONE]`);
      const u = c.usage;
      expect(u.total_tokens === u.prompt_tokens + u.completion_tokens, `usage ${show(u)}: total_tokens is not prompt_tokens + completion_tokens`);
    },
  },
  {
    id: 'max-tokens-length', title: 'An answer cut at max_tokens ends with finish_reason length, in JSON and in a stream', rules: ['§6.3'], group: 'compat',
    async run(probe, { model }) {
      const body = { model, max_tokens: 1, messages: [{ role: 'user', content: 'Count from 1 to 50, separated by commas.' }] };
      const json = (await probe.complete(body)).json as Json;
      const choice = json?.choices?.[0];
      expect(choice?.finish_reason === 'length', `with max_tokens 1, finish_reason is ${show(choice?.finish_reason)}, not length (content ${show(choice?.message?.content)})`);
      expect(!json.usage || json.usage.completion_tokens <= 1, `with max_tokens 1, usage.completion_tokens is ${json.usage?.completion_tokens}`);
      const last = (await streamed(probe, body)).filter((c) => c.choices?.length).at(-1)?.choices[0].finish_reason;
      expect(last === 'length', `streamed with max_tokens 1, the last finish_reason is ${show(last)}, not length`);
    },
  },
  {
    id: 'stop-sequence', title: 'stop, where offered: the answer ends before the sequence, which is not returned, with finish_reason stop', rules: [], group: 'compat',
    async run(probe, { model }) {
      // The stop sequence is taken from the server's own answer without one, so it is one the
      // answer reaches: a later answer holding it shows stop was ignored, whatever the model.
      const body = { model, max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: 'Count from 1 to 10, separated by commas.' }] };
      const first = (await probe.complete(body)).json as Json;
      const words = String(first?.choices?.[0]?.message?.content ?? '').split(/\s+/).filter(Boolean);
      if (words.length < 2) throw new NotApplicable(`the answer without stop has ${words.length} word(s) (${show(first?.choices?.[0]?.message?.content)}): no stop sequence to pick inside it`);
      const stop = words[Math.floor(words.length / 2)]!;
      const answer = await probe.complete({ ...body, stop: [stop] });
      offered(answer, 'stop', 'stop');
      const choice = (answer.json as Json)?.choices?.[0];
      const content = String(choice?.message?.content ?? '');
      expect(!content.includes(stop), `with stop ${show([stop])}, the answer ${show(content)} holds the stop sequence: stop was ignored`);
      expect(choice?.finish_reason === 'stop', `with stop ${show([stop])}, finish_reason is ${show(choice?.finish_reason)}, not stop`);
      const chunks = await streamed(probe, { ...body, stop: [stop] });
      const text = contentOf(chunks);
      expect(!text.includes(stop), `streamed with stop ${show([stop])}, the deltas join into ${show(text)}, which holds the stop sequence`);
      const last = chunks.filter((c) => c.choices?.length).at(-1)?.choices[0].finish_reason;
      expect(last === 'stop', `streamed with stop ${show([stop])}, the last finish_reason is ${show(last)}, not stop`);
    },
  },
  {
    id: 'unicode', title: 'Accents, CJK and emoji come back exactly, in JSON and in a stream', rules: [], group: 'compat',
    async run(probe, { model }) {
      const body = { model, max_tokens: 32, messages: [{ role: 'user', content: `Answer with the word: ${WORD}` }],
        response_format: { type: 'json_schema', json_schema: { name: 'word', strict: true, schema: WORD_SCHEMA } } };
      const answer = await probe.complete(body);
      if (answer.status === 400) {
        // Without json_schema the model's words are its own: only broken characters are graded.
        const plain = await probe.complete({ model, max_tokens: 16, messages: [{ role: 'user', content: `Repeat exactly: ${WORD}` }] });
        expect(plain.status === 200, `a request with ${WORD} was answered ${plain.status}`);
        expect(!/\uFFFD/.test(plain.text), `the answer holds U+FFFD (a broken character): ${show(plain.text)}`);
        return;
      }
      const word = (text: unknown) => (parseJson(text) as { value?: Json }).value?.word;
      const seen = word((answer.json as Json)?.choices?.[0]?.message?.content);
      expect(seen === WORD, `the enum word came back as ${show(seen)}, not ${show(WORD)}`);
      const streamedWord = word(contentOf(await streamed(probe, body)));
      expect(streamedWord === WORD, `streamed, the enum word came back as ${show(streamedWord)}, not ${show(WORD)}`);
    },
  },
  {
    id: 'concurrent-streams', title: 'Four concurrent streams each keep one id of their own', rules: ['§6.2'], group: 'compat',
    async run(probe, { model }) {
      const streams = await Promise.all(Array.from({ length: 4 }, (_, i) => streamed(probe, { model, max_tokens: 6, messages: [{ role: 'user', content: `Say hello to visitor ${i + 1}.` }] })));
      const ids = streams.map((chunks, i) => {
        const own = [...new Set(chunks.map((c) => c.id))];
        expect(own.length === 1, `stream ${i + 1} carries ${own.length} ids ${show(own)}: its chunks are mixed with another stream's`);
        return own[0];
      });
      const shared = ids.findIndex((id, i) => ids.indexOf(id) !== i);
      expect(shared === -1, `streams ${ids.indexOf(ids[shared]) + 1} and ${shared + 1} share the id ${show(ids[shared])}`);
    },
  },
  {
    id: 'headers', title: 'content-type application/json; a stream is text/event-stream with cache-control no-cache', rules: [], group: 'compat',
    async run(probe, { model }) {
      const json = await probe.complete({ model, max_tokens: 4, messages: [{ role: 'user', content: 'Say hello.' }] });
      const type = json.headers.get('content-type') ?? '';
      expect(type.startsWith('application/json'), `a JSON answer's content-type is ${show(type)}, not application/json`);
      const stream = await probe.complete({ model, max_tokens: 4, stream: true, messages: [{ role: 'user', content: 'Say hello.' }] });
      const streamType = stream.headers.get('content-type') ?? '';
      expect(streamType.startsWith('text/event-stream'), `a stream's content-type is ${show(streamType)}, not text/event-stream`);
      const cache = stream.headers.get('cache-control');
      expect(cache !== null && /no-cache|no-store/.test(cache), `a stream's cache-control is ${cache === null ? 'absent' : show(cache)}, where no-cache (or no-store) keeps proxies from holding it`);
    },
  },
  {
    id: 'logprobs', title: 'logprobs: true is honoured (choices[0].logprobs.content) or refused with 400, never ignored', rules: [], group: 'compat',
    async run(probe, { model }) {
      const answer = await probe.complete({ model, max_tokens: 4, logprobs: true, messages: [{ role: 'user', content: 'Say hello.' }] });
      offered(answer, 'logprobs', 'logprobs');
      const content = (answer.json as Json)?.choices?.[0]?.logprobs?.content;
      expect(Array.isArray(content) && content.length > 0 && content.every((t: Json) => typeof t.token === 'string' && typeof t.logprob === 'number'),
        `logprobs: true was answered 200 with choices[0].logprobs ${show((answer.json as Json)?.choices?.[0]?.logprobs)}: silently ignored`);
    },
  },
  {
    id: 'top-logprobs', title: 'top_logprobs: 2 is honoured (two alternatives per token) or refused with 400, never ignored', rules: [], group: 'compat',
    async run(probe, { model }) {
      const answer = await probe.complete({ model, max_tokens: 4, logprobs: true, top_logprobs: 2, messages: [{ role: 'user', content: 'Say hello.' }] });
      offered(answer, 'top_logprobs', 'top_logprobs', 'logprobs');
      const content = (answer.json as Json)?.choices?.[0]?.logprobs?.content;
      expect(Array.isArray(content) && content.length > 0 && content.every((t: Json) => Array.isArray(t.top_logprobs) && t.top_logprobs.length === 2),
        `top_logprobs: 2 was answered 200 without two top_logprobs per token (${show(content)}): silently ignored`);
    },
  },
  {
    id: 'n-choices', title: 'n: 2 gives two choices or is refused with 400, never one choice', rules: [], group: 'compat',
    async run(probe, { model }) {
      const answer = await probe.complete({ model, max_tokens: 4, n: 2, messages: [{ role: 'user', content: 'Say hello.' }] });
      offered(answer, 'n: 2', 'n');
      const choices = ((answer.json as Json)?.choices ?? []) as Json[];
      expect(choices.length === 2 && choices[0]?.index === 0 && choices[1]?.index === 1,
        `n: 2 was answered 200 with ${choices.length} choice(s) (indexes ${show(choices.map((c) => c.index))}): silently ignored`);
    },
  },
  {
    id: 'quota-402', title: 'A key without credits gets 402 insufficient_quota in the envelope', rules: ['§7 402', '§2.9', '§4 errors'], group: 'compat',
    async run(probe, { model, keyWithoutCredits }: CheckContext) {
      if (!keyWithoutCredits) throw new NotApplicable('no --key-without-credits given');
      expectEnvelope(await probe.complete({ model, max_tokens: 4, messages: [QUESTION] }, { key: keyWithoutCredits }), 402, 'insufficient_quota');
    },
  },
  {
    id: 'rate-limit-429', title: 'A key over its limit gets 429 rate_limit_error with Retry-After', rules: ['§7 429', '§2.9', '§4 errors'], group: 'compat',
    async run(probe, { model, keyLowLimit }: CheckContext) {
      if (!keyLowLimit) throw new NotApplicable('no --key-low-limit given');
      const statuses: number[] = [];
      for (let i = 0; i < 20; i += 1) {
        const answer = await probe.complete({ model, max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] }, { key: keyLowLimit });
        statuses.push(answer.status);
        if (answer.status !== 429) continue;
        expectEnvelope(answer, 429, 'rate_limit_error');
        const retry = answer.headers.get('retry-after');
        expect(retry !== null && (/^\d+$/.test(retry) || !Number.isNaN(Date.parse(retry))), `the 429 has Retry-After ${retry === null ? 'absent' : show(retry)}, not seconds or a date`);
        return;
      }
      throw new CheckFailure(`20 requests with --key-low-limit were answered ${show(statuses)}, never 429`);
    },
  },
  {
    id: 'body-413', title: 'A body over the server\'s limit gets 413 payload_too_large in the envelope', rules: ['§7 413', '§2.9', '§4 errors'], group: 'compat',
    async run(probe, { model, bodyLimitBytes }: CheckContext) {
      if (!bodyLimitBytes) throw new NotApplicable('no --body-limit-bytes given');
      const answer = await probe.complete({ model, max_tokens: 1, messages: [{ role: 'user', content: 'x'.repeat(bodyLimitBytes + 1024) }] });
      expectEnvelope(answer, 413, 'payload_too_large');
    },
  },
];
