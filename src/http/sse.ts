import type { Request, Response } from 'express';
import { logFailure, toServiceError } from './errors.ts';

type Logger = Pick<Console, 'error'>;

/**
 * The one SSE writer. Writes each item as a `data:` event and ends with `data: [DONE]`. A failure
 * before the first item is thrown, for the error handler to answer with a status; one after the
 * stream has started cannot change the status any more, so it leaves as a final
 * `data: {"error":…}` event. `signal` fires when the client goes away; the writer then
 * stops pulling items.
 */
export async function writeEventStream(
  req: Request,
  res: Response,
  items: AsyncIterable<unknown>,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  // The first item is awaited before the headers go out: until then a failure is an HTTP error.
  const iterator = items[Symbol.asyncIterator]();
  let next: IteratorResult<unknown>;
  try {
    next = await iterator.next();
  } catch (err) {
    await iterator.return?.();
    throw err;
  }
  res.status(200).set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();

  const send = (data: string) => {
    if (!res.writableEnded && !res.destroyed) res.write(`data: ${data}\n\n`);
  };
  try {
    for (; !next.done && !signal.aborted; next = await iterator.next()) {
      send(JSON.stringify(next.value));
    }
  } catch (err) {
    if (!signal.aborted) {
      const requestId = String(res.getHeader('x-request-id') ?? 'unknown');
      const error = toServiceError(err, requestId);
      logFailure(log, req, error, err, ' mid-stream');
      send(JSON.stringify(error.toEnvelope()));
    }
  } finally {
    await iterator.return?.();
    send('[DONE]');
    res.end();
  }
}
