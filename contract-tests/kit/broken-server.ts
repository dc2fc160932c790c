// A small OpenAI-compatible server for the kit's own tests: correct by default (the "minimal
// reference server"), or with the flaws a conformance kit must catch, one per rule. It answers
// canned text; it is a test double, never a service.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export type Flaw =
  | 'no-done' | 'no-role' | 'wrong-envelope' | 'accepts-bad-key' | 'absent-finish-reason'
  | 'json-schema-ignored' | 'json-schema-loose' | 'calls-despite-none' | 'ignores-named-choice'
  | 'whole-args-each-delta' | 'refuses-tool-history' | 'needs-assistant-content' | 'usage-on-finish-chunk'
  | 'ignores-max-tokens' | 'mangles-unicode' | 'shared-ids' | 'cacheable-stream' | 'ignores-logprobs'
  | 'ignores-n' | 'credits-ignored' | 'no-retry-after' | 'html-413' | 'always-streams' | 'model-not-echoed'
  | 'usage-miscounted' | 'accepts-missing-key' | 'ignores-limits' | 'no-v1' | 'ignores-stop' | 'refuses-unknown-fields'
  | 'object-arguments'
  // One per table row of the specification (rules.ts), each making that row's check fail.
  | 'accepts-missing-messages' | '400-as-422' | 'errors-as-text' | 'wrong-object' | 'wrong-finish-reason' | 'stream-as-json-type'
  | 'refuses-temperature-2' | 'accepts-temperature-above-2' | 'refuses-top-p-1' | 'accepts-top-p-above-1' | 'accepts-max-tokens-0'
  | 'accepts-max-tokens-above-32000' | 'ignores-tools' | 'refuses-assistant-tool-calls' | 'needs-tool-description' | 'call-without-id'
  | 'wrong-call-type' | 'call-without-name' | 'accepts-unknown-role' | 'accepts-missing-content' | 'refuses-text-parts' | 'refuses-name'
  | 'accepts-tool-without-id' | 'image-part-crash' | 'file-part-crash' | 'refuses-text-format' | 'accepts-json-schema-missing'
  | 'accepts-unnamed-schema' | 'accepts-unknown-tool-type' | 'accepts-tool-without-function' | 'accepts-unnamed-tool'
  | 'needs-tool-parameters' | 'refuses-auto-choice' | 'ignores-required' | 'refuses-json-charset'
  // Not a flaw: stop refused with 400 naming it, which the kit grades "not offered".
  | 'refuses-stop';

export const GOOD_KEY = 'sk-broken-server';
/** A key whose account has no credits (402), and one limited to one request (429 after). */
export const NO_CREDITS_KEY = 'sk-broken-server-no-credits';
export const LOW_LIMIT_KEY = 'sk-broken-server-low-limit';
/** The body limit: a larger body gets 413. */
export const BODY_LIMIT_BYTES = 64 * 1024;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A value that validates against a small JSON Schema: the first enum value, else a plain one. */
export function sample(schema: Json): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.type === 'object') return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sample(v as Json)]));
  if (schema.type === 'array') return [];
  return schema.type === 'integer' || schema.type === 'number' ? 1 : schema.type === 'boolean' ? true : 'Paris';
}

/** Why a body is refused (the field to name), or '' when it is valid; a flaw lets its case through. */
function invalid(body: Json, has: (flaw: Flaw) => boolean): string {
  if (!Array.isArray(body.messages)) return has('accepts-missing-messages') ? '' : 'messages';
  const range = (field: string, min: number, max: number, value = body[field]) => value !== undefined && (typeof value !== 'number' || value < min || value > max);
  // Each bound, and each flaw that moves it: refusing the inclusive upper bound, or accepting past it.
  if (!has('ignores-limits')) {
    if (range('temperature', 0, has('refuses-temperature-2') ? 1.99 : has('accepts-temperature-above-2') ? Infinity : 2)) return 'temperature';
    if (range('top_p', 0, has('refuses-top-p-1') ? 0.99 : has('accepts-top-p-above-1') ? Infinity : 1)) return 'top_p';
    if (range('max_tokens', has('accepts-max-tokens-0') ? 0 : 1, has('accepts-max-tokens-above-32000') ? Infinity : 32000)) return 'max_tokens';
  }
  const messages = body.messages as Json[];
  if (!has('accepts-unknown-role') && messages.some((m) => !['system', 'user', 'assistant', 'tool'].includes(m.role))) return 'messages';
  // content may be left out only on an assistant message with tool_calls.
  if (!has('accepts-missing-content') && messages.some((m) => m.content == null && !(m.role === 'assistant' && m.tool_calls))) return 'messages';
  if (!has('accepts-tool-without-id') && messages.some((m) => m.role === 'tool' && typeof m.tool_call_id !== 'string')) return 'messages';
  const format = body.response_format as Json | undefined;
  if (format?.type === 'json_schema') {
    if (!format.json_schema) return has('accepts-json-schema-missing') ? '' : 'response_format';
    if (typeof format.json_schema.name !== 'string' && !has('accepts-unnamed-schema')) return 'response_format';
  }
  for (const tool of (body.tools ?? []) as Json[]) {
    if (tool.type !== 'function' && !has('accepts-unknown-tool-type')) return 'tools';
    if (!tool.function && !has('accepts-tool-without-function')) return 'tools';
    if (tool.function && typeof tool.function.name !== 'string' && !has('accepts-unnamed-tool')) return 'tools';
  }
  return '';
}

/** A tool call as the JSON answer shows it, bent by the ToolCall flaws (§2.7). */
function shownCall(call: Json, has: (flaw: Flaw) => boolean): Json {
  // object-arguments: the arguments as a JSON object, not the JSON-encoded string ToolCall requires.
  const fn = { ...call.function, ...(has('object-arguments') ? { arguments: JSON.parse(call.function.arguments) } : {}) };
  if (has('call-without-name')) delete fn.name;
  const shown: Json = { ...call, function: fn, ...(has('wrong-call-type') ? { type: 'tool' } : {}) };
  if (has('call-without-id')) delete shown.id;
  return shown;
}

export function startBrokenServer(flaws: Flaw[] = []): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const has = (flaw: Flaw) => flaws.includes(flaw);
  let served = 0;
  let lowLimitUsed = 0;
  const fail = (res: ServerResponse, given: number, type: string, code: string, headers: Record<string, string> = {}, param: string | null = null) => {
    // 400-as-422: validation errors as 422, as FastAPI-based servers answer them.
    const status = given === 400 && has('400-as-422') ? 422 : given;
    res.writeHead(status, { 'content-type': has('errors-as-text') ? 'text/plain' : 'application/json', ...headers });
    const message = param ? `${param} is not offered` : `${type}: ${code}`;
    res.end(JSON.stringify(has('wrong-envelope') ? { message, status } : { error: { message, type, code, param } }));
  };
  // One endpoint, under /v1 (no-v1 serves it at the root, as some proxies do).
  const base = has('no-v1') ? '' : '/v1';
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const text = Buffer.concat(await req.toArray()).toString('utf8');
    if (req.method !== 'POST' || req.url !== `${base}/chat/completions`) return fail(res, 404, 'invalid_request_error', 'not_found');
    const key = req.headers.authorization?.replace(/^Bearer /, '');
    const keyAccepted = [GOOD_KEY, NO_CREDITS_KEY, LOW_LIMIT_KEY].includes(key ?? '') || (has('accepts-bad-key') && key) || (has('accepts-missing-key') && !key);
    if (!keyAccepted) {
      return fail(res, 401, 'authentication_error', 'invalid_api_key');
    }
    if (Buffer.byteLength(text) > BODY_LIMIT_BYTES) {
      if (has('html-413')) return res.writeHead(413, { 'content-type': 'text/html' }).end('<h1>413 Request Entity Too Large</h1>');
      return fail(res, 413, 'payload_too_large', 'payload_too_large');
    }
    if (key === NO_CREDITS_KEY && !has('credits-ignored')) return fail(res, 402, 'insufficient_quota', 'insufficient_quota');
    if (key === LOW_LIMIT_KEY && ++lowLimitUsed > 1) {
      return fail(res, 429, 'rate_limit_error', 'rate_limit_exceeded', has('no-retry-after') ? {} : { 'retry-after': '1' });
    }
    // refuses-json-charset: only the bare media type is taken as JSON.
    if (has('refuses-json-charset') && req.headers['content-type'] !== 'application/json') return fail(res, 415, 'invalid_request_error', 'unsupported_media_type');
    let body: Json;
    try {
      body = JSON.parse(text);
    } catch {
      return fail(res, 400, 'invalid_request_error', 'invalid_json');
    }
    const refused = invalid(body, has);
    if (refused) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, refused);
    // refuses-unknown-fields: a strict validator, which refuses what the wire format may grow.
    const known = ['model', 'messages', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'response_format', 'logprobs', 'top_logprobs', 'n', 'stop'];
    const unknown = Object.keys(body).find((k) => !known.includes(k));
    if (unknown && has('refuses-unknown-fields')) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, unknown);
    const messages = body.messages as Json[];
    const parts = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []) as Json[]);
    if (has('refuses-text-parts') && parts.length > 0) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'messages');
    if (has('refuses-name') && messages.some((m) => m.name !== undefined)) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'messages');
    if (has('refuses-assistant-tool-calls') && messages.some((m) => m.tool_calls)) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'messages');
    // image-part-crash, file-part-crash: a part the server never expected ends in a bare 500.
    const crashes = (type: string) => parts.some((p) => p.type === type);
    if ((has('image-part-crash') && crashes('image_url')) || (has('file-part-crash') && crashes('file'))) return res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error');
    if (has('refuses-text-format') && body.response_format?.type === 'text') return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'response_format');
    if (has('refuses-auto-choice') && body.tool_choice === 'auto') return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'tool_choice');
    const tooSparse = (has('needs-tool-description') && ((body.tools ?? []) as Json[]).some((t) => !t.function?.description))
      || (has('needs-tool-parameters') && ((body.tools ?? []) as Json[]).some((t) => !t.function?.parameters));
    if (tooSparse) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, 'tools');
    const noContent = messages.some((m) => m.role === 'assistant' && m.tool_calls && m.content == null);
    if (noContent && has('needs-assistant-content')) return fail(res, 400, 'invalid_request_error', 'invalid_request');
    if (messages.filter((m) => m.role === 'tool').length > 1 && has('refuses-tool-history')) return fail(res, 400, 'invalid_request_error', 'invalid_request');
    // What it does not offer, it refuses: logprobs and n > 1.
    if ((body.logprobs === true || body.top_logprobs != null) && !has('ignores-logprobs')) {
      return fail(res, 400, 'invalid_request_error', 'unsupported_parameter', {}, body.logprobs === true ? 'logprobs' : 'top_logprobs');
    }
    if ((body.n ?? 1) > 1 && !has('ignores-n')) return fail(res, 400, 'invalid_request_error', 'unsupported_parameter', {}, 'n');
    if (body.stop != null && has('refuses-stop')) return fail(res, 400, 'invalid_request_error', 'unsupported_parameter', {}, 'stop');

    served += 1;
    const id = has('shared-ids') ? 'service-1' : `service-${served}`;
    const head = { id, created: 1, model: has('model-not-echoed') ? 'gpt-4o-mini-2024-07-18' : body.model };
    const tools = (body.tools ?? []) as Json[];
    const choice = body.tool_choice;
    const named = typeof choice === 'object' && choice ? tools.find((t) => t.function?.name === choice.function?.name) : undefined;
    const tool = has('ignores-named-choice') ? tools[0] : named ?? tools[0];
    const wantsCall = tools.length > 0 && messages.at(-1)?.role !== 'tool' && (choice !== 'none' || has('calls-despite-none'))
      && !has('ignores-tools') && !(choice === 'required' && has('ignores-required'));
    const call = wantsCall ? { id: 'call_1', type: 'function', function: { name: tool!.function?.name, arguments: '{"city":"Paris"}' } } : undefined;
    const schema = body.response_format?.type === 'json_schema' ? body.response_format.json_schema : undefined;
    let content = 'Hello there';
    if (schema && !has('json-schema-ignored')) {
      const value = sample(schema.schema ?? {}) as Json;
      content = JSON.stringify(schema.strict && has('json-schema-loose') ? { ...value, note: 'extra' } : value);
    }
    if (has('mangles-unicode')) content = content.replace(/[^\x00-\x7f]/gu, '\uFFFD');
    // Two "tokens"; max_tokens 1 cuts the answer (ignores-max-tokens does not).
    const max = body.max_completion_tokens ?? body.max_tokens;
    const cut = !call && max === 1 && !has('ignores-max-tokens') && !schema;
    if (cut) content = 'Hello';
    // A stop sequence ends the answer before it, and is not returned (ignores-stop returns it all).
    const stops = (typeof body.stop === 'string' ? [body.stop] : body.stop ?? []) as string[];
    const at = Math.min(...stops.map((s) => content.indexOf(s)).filter((i) => i >= 0));
    if (!call && !has('ignores-stop') && Number.isFinite(at)) content = content.slice(0, at);
    const finish = call ? 'tool_calls' : cut ? 'length' : has('wrong-finish-reason') ? 'eos' : 'stop';
    const usage = { prompt_tokens: 3, completion_tokens: cut ? 1 : 2, total_tokens: (cut ? 4 : 5) + (has('usage-miscounted') ? 1 : 0) };
    if (body.stream !== true && !has('always-streams')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      // object-arguments: the arguments as a JSON object, not the JSON-encoded string ToolCall requires.
      const message = call ? { role: 'assistant', content: null, tool_calls: [shownCall(call, has)] } : { role: 'assistant', content };
      return res.end(JSON.stringify({ ...head, object: has('wrong-object') ? 'text_completion' : 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
    }
    res.writeHead(200, { 'content-type': has('stream-as-json-type') ? 'application/json' : 'text/event-stream', ...(has('cacheable-stream') ? {} : { 'cache-control': 'no-cache' }) });
    const includeUsage = body.stream_options?.include_usage === true;
    // absent-finish-reason: LiteLLM's intermediate chunks, which leave the field out instead of null.
    const chunk = (delta: object, finish: string | null, extra: object = {}) => `data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [{ index: 0, delta, ...(finish === null && has('absent-finish-reason') ? {} : { finish_reason: finish }) }], ...extra })}\n\n`;
    const pause = () => new Promise((r) => setTimeout(r, 5)); // lets concurrent streams overlap
    res.write(chunk(has('no-role') ? { content: '' } : { role: 'assistant', content: '' }, null));
    if (call) {
      res.write(chunk({ tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }, null));
      // The arguments in pieces; whole-args-each-delta repeats all of them in each delta (Ollama's old way).
      for (const piece of has('whole-args-each-delta') ? [call.function.arguments, call.function.arguments] : ['{"city":', '"Paris"}']) {
        await pause();
        res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }, null));
      }
    } else {
      for (const piece of content.split(/(?<= )/)) {
        await pause();
        res.write(chunk({ content: piece }, null));
      }
    }
    const lastExtra = includeUsage && has('usage-on-finish-chunk') ? { usage } : {};
    res.write(chunk({}, finish, lastExtra));
    if (includeUsage && !has('usage-on-finish-chunk')) res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
    res.end(has('no-done') ? '' : 'data: [DONE]\n\n');
  };
  // A flaw that lets a bad body through must not hang the check: what throws is a bare 500.
  const server: Server = createServer((req, res) => void handle(req, res).catch(() => res.headersSent ? res.end() : res.writeHead(500).end()));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    resolve({ baseUrl: `http://127.0.0.1:${port}${base}`, close: () => new Promise((done) => server.close(() => done())) });
  }));
}
