import { serviceUnavailable } from '../errors/service-error.ts';
import type { Engine, GenerationEvent } from './engine.ts';

export interface QueueOptions {
  /** Generations that run at once. */
  concurrency: number;
  /** Requests that may wait for a turn; one more is answered 503 `queue_full`. */
  maxWaiting: number;
  /** Milliseconds on a monotonic clock; tests pass a fake one. */
  now?: () => number;
  /** Hears the queue's length when it changes, and each generation's wait for its slot (the metrics). */
  observer?: QueueObserver;
}

export interface QueueObserver {
  waiting(count: number): void;
  waited(ms: number): void;
}

/** A request waiting for a slot: it either starts, or leaves (refused with its signal's reason). */
interface Turn {
  signal: AbortSignal;
  start(): void;
  leave(): void;
}

/** The newest generation's share of the moving average of how long a generation holds a slot. */
const RECENT_WEIGHT = 0.3;
const RETRY_AFTER_MAX_SECONDS = 600;

/**
 * First come, first served: at most `concurrency` generations run, the rest wait in arrival
 * order, and a full queue is refused at once rather than left to time out. A request whose
 * client leaves while it waits gives its place up.
 */
export function withQueue(engine: Engine, options: QueueOptions): Engine {
  const now = options.now ?? (() => performance.now());
  const observer = options.observer;
  let running = 0;
  const waiting: Turn[] = [];
  let recentHoldMs: number | undefined;

  const next = () => {
    while (running < options.concurrency && waiting.length > 0) {
      const turn = waiting.shift()!;
      observer?.waiting(waiting.length);
      // A turn is always answered: one whose client left is refused, never dropped unanswered.
      if (turn.signal.aborted) {
        turn.leave();
        continue;
      }
      running++;
      turn.start();
    }
  };

  /**
   * Roughly how long the queue ahead takes to drain, so that refused clients come back spread
   * over that time instead of all at once a second later. At least one generation is ahead of a
   * retry even when none may wait.
   */
  const retryAfterSeconds = () => {
    if (recentHoldMs === undefined) return 1;
    const seconds = (Math.max(waiting.length, 1) * recentHoldMs) / 1000 / options.concurrency;
    return Math.min(RETRY_AFTER_MAX_SECONDS, Math.max(1, Math.ceil(seconds)));
  };

  const acquire = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      // Checked first: an aborted signal never fires 'abort' again, so a listener added now would
      // never run, and a client that left needs no slot.
      if (signal.aborted) return reject(signal.reason);
      if (running < options.concurrency && waiting.length === 0) {
        running++;
        observer?.waited(0);
        return resolve();
      }
      if (waiting.length >= options.maxWaiting) {
        const seconds = retryAfterSeconds();
        return reject(serviceUnavailable(
          `The service is at capacity (${running} generating, ${waiting.length} waiting). Retry in about ${seconds} s.`,
          'queue_full', seconds));
      }
      const queuedAt = now();
      const onAbort = () => {
        const at = waiting.indexOf(turn);
        if (at >= 0) waiting.splice(at, 1);
        observer?.waiting(waiting.length);
        turn.leave();
      };
      const turn: Turn = {
        signal,
        start: () => {
          signal.removeEventListener('abort', onAbort);
          observer?.waited(now() - queuedAt);
          resolve();
        },
        leave: () => {
          signal.removeEventListener('abort', onAbort);
          reject(signal.reason);
        },
      };
      waiting.push(turn);
      observer?.waiting(waiting.length);
      signal.addEventListener('abort', onAbort, { once: true });
    });

  return {
    description: engine.description,
    ...(engine.kind ? { kind: engine.kind } : {}),
    ...(engine.readsImages ? { readsImages: true } : {}),
    ...(engine.close ? { close: () => engine.close!() } : {}),
    ...(engine.countTokens ? { countTokens: (text: string) => engine.countTokens!(text) } : {}),
    ...(engine.generatedTokens ? { generatedTokens: () => engine.generatedTokens!() } : {}),
    ...(engine.evaluatedPromptTokens ? { evaluatedPromptTokens: () => engine.evaluatedPromptTokens!() } : {}),
    generate(request) {
      return queued(request);
    },
  };

  /**
   * The engine's events once a slot is free; the slot is given back when they end, fail or are
   * closed. A plain iterator, not a generator delegating with `yield*`: that costs several
   * promises on every event of every answer, and this wraps them all.
   */
  function queued(request: Parameters<Engine['generate']>[0]): AsyncIterableIterator<GenerationEvent> {
    let events: AsyncIterator<GenerationEvent> | undefined;
    let startedAt = 0;
    let holding = false;
    let closed = false;
    const release = () => {
      if (!holding) return;
      holding = false;
      const heldMs = now() - startedAt;
      recentHoldMs = recentHoldMs === undefined ? heldMs : recentHoldMs + RECENT_WEIGHT * (heldMs - recentHoldMs);
      running--;
      next();
    };
    const passed = (result: IteratorResult<GenerationEvent>) => {
      if (result.done) release();
      return result;
    };
    const failed = (err: unknown): never => {
      release();
      throw err;
    };
    const finished = { done: true, value: undefined } as const;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      next() {
        if (events) return events.next().then(passed, failed);
        if (closed) return Promise.resolve(finished);
        return acquire(request.signal).then(() => {
          holding = true;
          startedAt = now();
          if (closed) return passed(finished); // closed while it waited: the slot goes back unused
          events = engine.generate(request)[Symbol.asyncIterator]();
          return events.next().then(passed, failed);
        });
      },
      async return() {
        closed = true;
        try {
          await events?.return?.();
        } finally {
          release();
        }
        return finished;
      },
    };
  }
}
