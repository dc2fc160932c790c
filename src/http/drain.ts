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
 * Passes the events on until `shutdown` fires; then stops the source (an engine releases what it
 * holds) and fails with 503 `shutting_down`, which a stream sends as its final error event.
 */
export async function* untilShutdown<T>(events: AsyncIterable<T>, shutdown: AbortSignal): AsyncGenerator<T> {
  const iterator = events[Symbol.asyncIterator]();
  const stopped = new Promise<never>((_, reject) => {
    const stop = () => reject(serviceUnavailable('The service is shutting down; retry on another instance or shortly.', 'shutting_down', 1));
    if (shutdown.aborted) stop();
    else shutdown.addEventListener('abort', stop, { once: true });
  });
  stopped.catch(() => {}); // observed below; never an unhandled rejection
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), stopped]);
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Not awaited: with a read still pending it would settle only at the engine's next event.
    iterator.return?.().catch(() => {});
  }
}
