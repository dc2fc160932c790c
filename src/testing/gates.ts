import type { Engine } from '../engines/engine.ts';
import type { Metrics } from '../http/metrics.ts';

/** A promise a test opens when it wants: work waits at `passed()` until `open()`. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let waiting = 0;
  return {
    open,
    /** Waits for the gate, or rejects with the signal's reason when it fires first. */
    passed: (signal?: AbortSignal): Promise<void> => {
      waiting++;
      if (!signal) return opened;
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        void opened.then(() => (signal.removeEventListener('abort', onAbort), resolve()));
      });
    },
    /** How many have come to the gate so far. */
    arrived: () => waiting,
  };
}

/** `engine`, each generation of which starts only once `held` is open (a slot held as long as a test wants). */
export function heldEngine(engine: Engine, held: ReturnType<typeof gate>): Engine {
  return {
    ...engine,
    description: `held ${engine.description}`,
    async *generate(request) {
      await held.passed(request.signal);
      yield* engine.generate(request);
    },
  };
}

/** Polls until `check` holds; the test's own timeout is the hang detector. */
export async function until(check: () => boolean | Promise<boolean>, everyMs = 10): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, everyMs));
}

/** The requests the metrics count as not yet ended (`service_requests_open`). */
export async function openRequests(metrics: Metrics): Promise<number> {
  const line = (await metrics.text()).split('\n').find((l) => l.startsWith('service_requests_open '));
  return Number(line?.split(' ')[1]);
}
