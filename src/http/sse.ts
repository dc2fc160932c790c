import type { Request, Response } from 'express';
import { logFailure, toServiceError } from './errors.ts';
import { recordError } from './request-outcome.ts';
import type { Logger } from '../logging.ts';
import { requestIdOf } from '../request-scope.ts';

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

  const out = new TurnBuffer(res);
  const send = (data: string) => out.add(`data: ${data}\n\n`);
  try {
    for (; !next.done && !signal.aborted; next = await iterator.next()) {
      send(JSON.stringify(next.value));
    }
  } catch (err) {
    if (!signal.aborted) {
      const error = toServiceError(err, requestIdOf(res));
      logFailure(log, req, res, error, err, ' mid-stream');
      recordError(res, error);
      send(JSON.stringify(error.toEnvelope()));
    }
  } finally {
    await iterator.return?.();
    send('[DONE]');
    out.end();
  }
}

/**
 * Events that are ready together (one read from an upstream often holds many) leave in one write:
 * their text is joined and written once the event loop has run the I/O callbacks of this turn
 * (setImmediate: a tick would come too soon, between two events of the same read), so an event
 * waits well under a millisecond. One `res.write` per turn instead of one per event: each write
 * is a chunk of the chunked encoding (its size line and CRLF, three pieces of the system call) and
 * a pass through node's HTTP writer; the headers leave with the first write.
 */
class TurnBuffer {
  private pending = '';
  private scheduled = false;

  constructor(private readonly res: Response) {}

  add(text: string): void {
    if (this.closed) return;
    this.pending += text;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Writes what is pending, and ends the response. */
  end(): void {
    if (this.closed) return;
    const last = this.pending;
    this.pending = '';
    this.res.end(last);
  }

  private get closed(): boolean {
    return this.res.writableEnded || this.res.destroyed;
  }

  private readonly flush = () => {
    this.scheduled = false;
    const text = this.pending;
    this.pending = '';
    if (text && !this.closed) this.res.write(text);
  };
}
