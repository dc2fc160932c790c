import { serviceUnavailable } from '../http/errors.ts';
import type { Engine } from './engine.ts';

export interface QueueOptions {
  /** Generations that run at once. */
  concurrency: number;
  /** Requests that may wait for a turn; one more is answered 503 `queue_full`. */
  maxWaiting: number;
}

/**
 * First come, first served: at most `concurrency` generations run, the rest wait in arrival
 * order, and a full queue is refused at once rather than left to time out. A request whose
 * client leaves while it waits gives its place up.
 */
export function withQueue(engine: Engine, options: QueueOptions): Engine {
  let running = 0;
  const waiting: { start: () => void; signal: AbortSignal }[] = [];

  const next = () => {
    while (running < options.concurrency && waiting.length > 0) {
      const turn = waiting.shift()!;
      if (turn.signal.aborted) continue;
      running++;
      turn.start();
    }
  };

  const acquire = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (running < options.concurrency && waiting.length === 0) {
        running++;
        return resolve();
      }
      if (waiting.length >= options.maxWaiting) {
        return reject(serviceUnavailable(
          `The service is at capacity (${running} generating, ${waiting.length} waiting). Retry shortly.`,
          'queue_full'));
      }
      const turn = { start: resolve, signal };
      waiting.push(turn);
      signal.addEventListener('abort', () => {
        const at = waiting.indexOf(turn);
        if (at >= 0) waiting.splice(at, 1);
        reject(signal.reason);
      }, { once: true });
    });

  return {
    description: engine.description,
    ...(engine.close ? { close: () => engine.close!() } : {}),
    ...(engine.countTokens ? { countTokens: (text: string) => engine.countTokens!(text) } : {}),
    async *generate(request) {
      await acquire(request.signal);
      try {
        yield* engine.generate(request);
      } finally {
        running--;
        next();
      }
    },
  };
}
