// A small OpenAI-compatible server for the kit's own tests: correct by default, or with the flaws
// a conformance kit must catch. It answers canned text; it is a test double, never a service.
import { createServer, type Server, type ServerResponse } from 'node:http';

export type Flaw = 'no-done' | 'no-role' | 'wrong-envelope' | 'accepts-bad-key' | 'absent-finish-reason';

export const GOOD_KEY = 'sk-broken-server';

export function startBrokenServer(flaws: Flaw[] = []): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const has = (flaw: Flaw) => flaws.includes(flaw);
  const fail = (res: ServerResponse, status: number, type: string, code: string) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(has('wrong-envelope') ? { message: `${type}: ${code}`, status } : { error: { message: `${type}: ${code}`, type, code } }));
  };
  const server: Server = createServer(async (req, res) => {
    const text = Buffer.concat(await req.toArray()).toString('utf8');
    if (req.headers.authorization !== `Bearer ${GOOD_KEY}` && !(has('accepts-bad-key') && req.headers.authorization)) {
      return fail(res, 401, 'authentication_error', 'invalid_api_key');
    }
    let body: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    try {
      body = JSON.parse(text);
    } catch {
      return fail(res, 400, 'invalid_request_error', 'invalid_json');
    }
    const bad = !Array.isArray(body.messages) || (body.temperature ?? 1) > 2 || (body.top_p ?? 1) > 1 || (body.max_tokens ?? 1) < 1;
    if (bad) return fail(res, 400, 'invalid_request_error', 'invalid_request');
    const id = 'service-1';
    const base = { id, created: 1, model: body.model };
    const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    const call = body.tools?.length && body.messages.at(-1)?.role !== 'tool'
      ? { id: 'call_1', type: 'function', function: { name: body.tools[0].function.name, arguments: '{"city":"Paris"}' } } : undefined;
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: 'Hello there' };
      return res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: call ? 'tool_calls' : 'stop' }], usage }));
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // absent-finish-reason: LiteLLM's intermediate chunks, which leave the field out instead of null.
    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, ...(finish === null && has('absent-finish-reason') ? {} : { finish_reason: finish }) }] })}\n\n`;
    res.write(chunk(has('no-role') ? { content: '' } : { role: 'assistant', content: '' }, null));
    res.write(chunk({ content: 'Hello there' }, null));
    res.write(chunk({}, 'stop'));
    res.end(has('no-done') ? '' : 'data: [DONE]\n\n');
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    resolve({ baseUrl: `http://127.0.0.1:${port}/v1`, close: () => new Promise((done) => server.close(() => done())) });
  }));
}
