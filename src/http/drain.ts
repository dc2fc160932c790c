import { serviceUnavailable } from '../errors/service-error.ts';

/**
 * The requests in flight, so that a shutdown lets them finish and then ends what is left
 * cleanly: a stream with the in-stream error frame and `[DONE]`, a JSON request with a 503. A
 * stream is never just cut.
 */
export class Drain {
  private readonly inFlight = new Set<AbortController>();
  private idle: (() => void) | undefined;

  /** A request starts: its signal fires if the grace period ends first; call `done` when it ends. */
  track(): { signal: AbortSignal; done: () => void } {
    const controller = new AbortController();
    this.inFlight.add(controller);
    return {
      signal: controller.signal,
      done: () => {
        this.inFlight.delete(controller);
        if (this.inFlight.size === 0) this.idle?.();
      },
    };
  }

  get size(): number {
    return this.inFlight.size;
  }

  /**
   * Waits up to `graceMs` for the requests in flight, then ends the rest and waits (briefly) for
   * them to write their last event; answers how many were ended.
   */
  async drain(graceMs: number): Promise<number> {
    await this.whenIdle(graceMs);
    const left = [...this.inFlight];
    for (const controller of left) controller.abort();
    await this.whenIdle(FINAL_WRITE_MS);
    return left.length;
  }

  private whenIdle(ms: number): Promise<void> {
    if (this.inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.idle = resolve;
      setTimeout(resolve, ms).unref();
    });
  }
}

/** How long an ended request may take to send its error frame and `[DONE]`. */
const FINAL_WRITE_MS = 2000;

/**
 * Passes the events on until `shutdown` fires; then fails a pending read (or the next) with 503
 * `shutting_down`, which a stream sends as its final error event, and stops the source (an engine
 * releases what it holds). A plain iterator, not a generator racing each read: this sits on every
 * event of every answer.
 */
export function untilShutdown<T>(events: AsyncIterable<T>, shutdown: AbortSignal): AsyncIterableIterator<T> {
  const source = events[Symbol.asyncIterator]();
  let failPending: ((err: unknown) => void) | undefined;
  const shuttingDown = () => serviceUnavailable('The service is shutting down; retry on another instance or shortly.', 'shutting_down', 1);
  const stop = () => {
    failPending?.(shuttingDown());
    // Not awaited: with a read still pending it would settle only at the engine's next event.
    source.return?.().catch(() => {});
  };
  shutdown.addEventListener('abort', stop, { once: true });
  const release = () => shutdown.removeEventListener('abort', stop);
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next() {
      if (shutdown.aborted) {
        source.return?.().catch(() => {});
        return Promise.reject(shuttingDown());
      }
      return new Promise<IteratorResult<T>>((resolve, reject) => {
        failPending = reject;
        source.next().then((result) => {
          if (result.done) release();
          resolve(result);
        }, (err: unknown) => {
          release();
          reject(err);
        });
      });
    },
    return() {
      release();
      source.return?.().catch(() => {});
      return Promise.resolve({ done: true, value: undefined });
    },
  };
}
