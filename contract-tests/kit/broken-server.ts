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

export function startBrokenServer(flaws: Flaw[] = []): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const has = (flaw: Flaw) => flaws.includes(flaw);
  let served = 0;
  let lowLimitUsed = 0;
  const fail = (res: ServerResponse, status: number, type: string, code: string, headers: Record<string, string> = {}, param: string | null = null) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
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
    let body: Json;
    try {
      body = JSON.parse(text);
    } catch {
      return fail(res, 400, 'invalid_request_error', 'invalid_json');
    }
    const outOfRange = (body.temperature ?? 1) > 2 || (body.top_p ?? 1) > 1 || (body.max_tokens ?? 1) < 1;
    const bad = !Array.isArray(body.messages) || (outOfRange && !has('ignores-limits'));
    if (bad) return fail(res, 400, 'invalid_request_error', 'invalid_request');
    // refuses-unknown-fields: a strict validator, which refuses what the wire format may grow.
    const known = ['model', 'messages', 'stream', 'stream_options', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'tools', 'tool_choice', 'response_format', 'logprobs', 'top_logprobs', 'n', 'stop'];
    const unknown = Object.keys(body).find((k) => !known.includes(k));
    if (unknown && has('refuses-unknown-fields')) return fail(res, 400, 'invalid_request_error', 'invalid_request', {}, unknown);
    const messages = body.messages as Json[];
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
    const named = typeof choice === 'object' && choice ? tools.find((t) => t.function.name === choice.function?.name) : undefined;
    const tool = has('ignores-named-choice') ? tools[0] : named ?? tools[0];
    const wantsCall = tools.length > 0 && messages.at(-1)?.role !== 'tool' && (choice !== 'none' || has('calls-despite-none'));
    const call = wantsCall ? { id: 'call_1', type: 'function', function: { name: tool!.function.name, arguments: '{"city":"Paris"}' } } : undefined;
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
    const finish = call ? 'tool_calls' : cut ? 'length' : 'stop';
    const usage = { prompt_tokens: 3, completion_tokens: cut ? 1 : 2, total_tokens: (cut ? 4 : 5) + (has('usage-miscounted') ? 1 : 0) };
    if (body.stream !== true && !has('always-streams')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      // object-arguments: the arguments as a JSON object, not the JSON-encoded string ToolCall requires.
      const shown = call && has('object-arguments') ? { ...call, function: { ...call.function, arguments: JSON.parse(call.function.arguments) } } : call;
      const message = call ? { role: 'assistant', content: null, tool_calls: [shown] } : { role: 'assistant', content };
      return res.end(JSON.stringify({ ...head, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', ...(has('cacheable-stream') ? {} : { 'cache-control': 'no-cache' }) });
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
  const server: Server = createServer((req, res) => void handle(req, res));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    resolve({ baseUrl: `http://127.0.0.1:${port}${base}`, close: () => new Promise((done) => server.close(() => done())) });
  }));
}
