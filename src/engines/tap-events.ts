/**
 * What a stage does as each event of an answer passes through it, synchronously: note it, fold
 * it, or put another in its place.
 */
export interface EventTap<T> {
  /** Sees each event before it is passed on; what it returns (if anything) is passed instead. */
  event?(event: T): T | void;
  /** Sees the source's failure before it is passed on; what it returns is thrown instead. */
  failed?(err: unknown): unknown;
}

/**
 * Passes `events` on through `tap`: the pass-through stages (the meter, the cache's store, the
 * request's outcome) sit on every event of every answer. A plain iterator costs one promise per
 * event where an async generator with `for await` and `yield` costs several turns of the
 * microtask queue (each a promise, each seen by the request scope's promise hook), and a streamed
 * answer crosses each layer 22 times on the gateway bench. Like `for await`, it closes the
 * source when closed itself, or when the tap throws; unlike a generator closed before its first
 * read, it closes the source then too.
 */
export function tapEvents<T>(events: AsyncIterable<T>, tap: EventTap<T>): AsyncIterableIterator<T> {
  const source = events[Symbol.asyncIterator]();
  const close = () => source.return?.().catch(() => {});
  const passed = (result: IteratorResult<T>): IteratorResult<T> => {
    if (result.done || !tap.event) return result;
    let replaced: T | void;
    try {
      replaced = tap.event(result.value);
    } catch (err) {
      close();
      throw err;
    }
    return replaced === undefined ? result : { done: false, value: replaced };
  };
  const failed = tap.failed ? (err: unknown): never => { throw tap.failed!(err); } : undefined;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => source.next().then(passed, failed),
    return: async () => {
      await source.return?.();
      return { done: true, value: undefined };
    },
  };
}
