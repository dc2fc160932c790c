import { taskQueueFull, taskShareExceeded } from '../errors/task-errors.ts';

/** Bounds on one engine's queue (config: `TASK_TIMEOUT_MS`, `TASK_QUEUE_MAX`, `TASK_QUEUE_PER_CALLER`). */
export interface QueueLimits {
  /** A job not finished this long after it was queued is stopped (or never started). */
  timeoutMs: number;
  /** Jobs that may wait behind the running one; one more is refused with 503 `task_queue_full`. */
  maxQueued?: number;
  /** Jobs one caller may have waiting or running; one more is refused with 429 `rate_limit_exceeded`. */
  perCaller?: number;
}

/** A job's run: it must stop, and settle, when `signal` aborts (its deadline passed). */
export type JobRun<T> = (signal: AbortSignal) => Promise<T>;

interface Entry {
  caller: string;
  run: JobRun<unknown>;
  deadline: AbortController;
  timer: NodeJS.Timeout;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Callers the service could not name share one lane, and no share is counted for them. */
const UNNAMED = '';

/**
 * One engine's jobs, run one at a time. Each caller (an API key) has its own lane and the lanes
 * take turns, so a caller with many jobs waits for its own, not everyone else; the queue and each
 * caller's share of it are bounded. A job's deadline counts from when it was queued: a job that
 * waited past it is refused without running, and a running one is aborted (its runner kills its
 * process). Own code rather than p-queue: p-queue has neither lanes nor shares, and its timeout
 * starts when a job runs.
 */
export class JobQueue {
  private readonly lanes = new Map<string, Entry[]>();
  private readonly held = new Map<string, number>();
  private waiting = 0;
  private busy = false;

  /** `timedOut` is the error of a job past its deadline. */
  constructor(private readonly what: string, private readonly limits: QueueLimits, private readonly timedOut: () => Error) {}

  add<T>(caller: string | undefined, run: JobRun<T>): Promise<T> {
    const lane = caller ?? UNNAMED;
    const { maxQueued = Infinity, perCaller = Infinity } = this.limits;
    if (this.busy && this.waiting >= maxQueued) return Promise.reject(taskQueueFull(this.what, maxQueued));
    if (lane !== UNNAMED && (this.held.get(lane) ?? 0) >= perCaller) return Promise.reject(taskShareExceeded(this.what, perCaller));
    return new Promise<T>((resolve, reject) => {
      const deadline = new AbortController();
      const entry: Entry = {
        caller: lane, run: run as JobRun<unknown>, deadline, resolve: resolve as (value: unknown) => void, reject,
        timer: setTimeout(() => deadline.abort(this.timedOut()), this.limits.timeoutMs),
      };
      deadline.signal.addEventListener('abort', () => this.expire(entry), { once: true });
      this.held.set(lane, (this.held.get(lane) ?? 0) + 1);
      this.lanes.set(lane, [...(this.lanes.get(lane) ?? []), entry]);
      this.waiting++;
      this.next();
    });
  }

  /** Past its deadline: a waiting job leaves the queue; a running one is told through its signal. */
  private expire(entry: Entry): void {
    entry.reject(entry.deadline.signal.reason);
    const lane = this.lanes.get(entry.caller);
    const at = lane?.indexOf(entry) ?? -1;
    if (at < 0) return; // running: its runner stops it, and `next` follows when it has
    lane!.splice(at, 1);
    if (lane!.length === 0) this.lanes.delete(entry.caller);
    this.waiting--;
    this.release(entry);
  }

  private next(): void {
    if (this.busy) return;
    const [caller, lane] = this.lanes.entries().next().value ?? [];
    if (caller === undefined || !lane) return;
    const entry = lane.shift()!;
    this.lanes.delete(caller);
    if (lane.length > 0) this.lanes.set(caller, lane); // to the back: the other callers go first
    this.waiting--;
    this.busy = true;
    Promise.resolve()
      .then(() => entry.run(entry.deadline.signal))
      .then(entry.resolve, entry.reject)
      .finally(() => {
        this.busy = false;
        this.release(entry);
        this.next();
      });
  }

  private release(entry: Entry): void {
    clearTimeout(entry.timer);
    const held = (this.held.get(entry.caller) ?? 1) - 1;
    if (held > 0) this.held.set(entry.caller, held);
    else this.held.delete(entry.caller);
  }
}
