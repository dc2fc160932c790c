// An OpenAI-compatible upstream that answers at once with prepared bytes: a 20-word answer as one
// JSON completion, or as a stream of 22 events (role, 20 words, finish with usage) and [DONE].
import { createServer } from 'node:http';

const words = Array.from({ length: 20 }, (_, i) => `word${i} `);
const usage = { prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 };
const base = { id: 'chatcmpl-upstream', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'service' };
const chunk = (delta: object, finish: string | null, extra: object = {}) =>
  `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
const streamed = Buffer.from([
  chunk({ role: 'assistant', content: '' }, null),
  ...words.map((w) => chunk({ content: w }, null)),
  chunk({}, 'stop', { usage }),
  'data: [DONE]\n\n',
].join(''));
const whole = Buffer.from(JSON.stringify({
  ...base, object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }], usage,
}));

createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    const stream = /"stream"\s*:\s*true/.test(body);
    res.writeHead(200, { 'Content-Type': stream ? 'text/event-stream' : 'application/json' });
    res.end(stream ? streamed : whole);
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
