import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { invalidRequest, mockUnavailable, type ServiceError } from '../errors/service-error.ts';

/** Response headers that belong to one hop, not to the answer. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);

/**
 * What the Prism mock does not do by itself, done in front of it so that the mock behaves like
 * the service for frontend teams:
 * - `stream: true` gets the streamed example whatever `Accept` says (the official SDK sends
 *   `Accept: application/json`), one event at a time, `eventGapMs` apart, as a server streams;
 * - a body that is not JSON gets the service's 400 envelope (`invalid_json`);
 * - `GET /docs` is the API reference, as on the service (`docsFile`, built by `make docs`).
 * Everything else (examples, `Prefer`, request validation, the 401 without a key, CORS) is Prism's.
 */
export function createMockFront(prismOrigin: string, docsFile: string, eventGapMs = 40): Server {
  return createServer((req, res) => {
    const work = req.method === 'GET' && (req.url ?? '').split('?')[0] === '/docs'
      ? readFile(docsFile).then((page) => void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page))
      : handle(req, res, prismOrigin, eventGapMs);
    work.catch((err: unknown) => {
      if (!res.headersSent) send(res, mockUnavailable(`The Prism mock behind this front failed: ${(err as Error).message}`));
      else res.destroy();
    });
  });
}

async function handle(req: IncomingMessage, res: ServerResponse, prismOrigin: string, eventGapMs: number): Promise<void> {
  const body = Buffer.concat(await req.toArray());
  let streamed = false;
  if (req.method === 'POST' && /\/chat\/completions$/.test((req.url ?? '').split('?')[0]!) && body.length > 0) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (err) {
      return send(res, invalidRequest(`The body is not valid JSON: ${(err as Error).message}`, 'invalid_json'));
    }
    streamed = (parsed as { stream?: unknown } | null)?.stream === true;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && name !== 'host' && !HOP_HEADERS.has(name)) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  if (streamed) headers.set('accept', 'text/event-stream');
  const answer = await fetch(`${prismOrigin}${req.url}`, { method: req.method!, headers, ...(body.length > 0 ? { body } : {}) });
  const text = Buffer.from(await answer.arrayBuffer());
  answer.headers.forEach((value, name) => void (HOP_HEADERS.has(name) || res.setHeader(name, value)));
  res.statusCode = answer.status;
  if (!(answer.headers.get('content-type') ?? '').startsWith('text/event-stream')) return void res.end(text);
  res.flushHeaders();
  for (const event of text.toString('utf8').split(/\n\n+/).filter((e) => e.trim() !== '')) {
    if (res.destroyed) return;
    res.write(`${event.trim()}\n\n`);
    await new Promise((resolve) => setTimeout(resolve, eventGapMs));
  }
  res.end();
}

/** The service's envelope, from the service's own factories (src/errors/), so the two cannot drift. */
function send(res: ServerResponse, error: ServiceError): void {
  res.writeHead(error.status, { ...error.headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(error.toEnvelope()));
}
