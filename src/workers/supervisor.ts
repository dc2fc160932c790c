import { Child, type ChildSpec } from './child.ts';
import { JobQueue, type QueueLimits } from './job-queue.ts';

/** How a supervised engine's failures read, as the errors its callers get. */
export interface Failures {
  /** It could not start, or stopped before it was ready. */
  start(why: string): Error;
  /** It exited while a job ran (`child` keeps its stderr's tail). */
  exit(child: Child, code: number | null, signal: NodeJS.Signals | null): Error;
  /** A job passed its deadline. */
  timeout(): Error;
}

/** A long-lived engine: what to run, and how it says it is ready (its protocol's first step). */
export interface EngineSpec<Session> {
  /** Names the engine in errors: "object detection", "the text guard". */
  what: string;
  child: ChildSpec;
  limits: QueueLimits;
  failures: Failures;
  /** Resolves with what jobs talk to once the started child is ready for them. */
  ready(child: Child): Promise<Session>;
}

interface Running<Session> {
  child: Child;
  session: Promise<Session>;
}

/**
 * The one owner of a long-lived child process that serves jobs (a worker module over IPC, a
 * Python model over JSON lines): started on first use (or by `warm`), its jobs queued with a bound
 * and a share per caller (JobQueue), each within a deadline counted from when it was queued. A job
 * past its deadline, or close(), kills the child's whole process group; a child that dies fails
 * its job, and the next job starts a new one. An idle child does not keep the process alive.
 */
export class Supervisor<Session> {
  private running: Running<Session> | undefined;
  private readonly queue: JobQueue;

  readonly what: string;

  constructor(private readonly spec: EngineSpec<Session>) {
    this.what = spec.what;
    this.queue = new JobQueue(spec.what, spec.limits, () => spec.failures.timeout());
  }

  /** Queues `job` for `caller` (an API key id, where known); it runs with the ready session. */
  run<T>(caller: string | undefined, job: (session: Session, child: Child) => Promise<T>): Promise<T> {
    return this.queue.add(caller, (signal) => this.attempt(job, signal));
  }

  /** Starts the child and waits until it is ready (a model loaded), so that the first job does not wait. */
  async warm(): Promise<Session> {
    return this.start().session;
  }

  async close(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    running?.child.kill();
  }

  private start(): Running<Session> {
    if (this.running?.child.alive) return this.running;
    const child = new Child(this.spec.child);
    const { failures } = this.spec;
    const session = child.spawned()
      .then(() => new Promise<Session>((resolve, reject) => {
        const stop = child.whenClosed(() => reject(new Error(child.lastStderrLine('it stopped before it was ready'))));
        this.spec.ready(child).then(resolve, reject).finally(stop);
      }))
      .catch((err: Error) => {
        this.forget(child);
        child.kill();
        throw failures.start(err.message);
      });
    // Starting keeps this process alive (a warm() may be all that waits on it); once ready, an idle child does not.
    session.then(() => child.unref(), () => {}); // a failed start: the jobs that wait on it get the error
    const running = { child, session };
    this.running = running;
    child.whenClosed(() => this.forget(child));
    return running;
  }

  /** A child that exited or was killed: the next job starts a new one. */
  private forget(child: Child): void {
    if (this.running?.child === child) this.running = undefined;
  }

  private attempt<T>(job: (session: Session, child: Child) => Promise<T>, signal: AbortSignal): Promise<T> {
    const { child, session } = this.start();
    let stop = () => {};
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        this.forget(child);
        child.kill();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      // A child that dies mid-job fails it, whatever its protocol is still waiting for.
      const unwatch = child.whenClosed(({ code, signal: killed }) => reject(this.spec.failures.exit(child, code, killed)));
      stop = () => {
        signal.removeEventListener('abort', onAbort);
        unwatch();
      };
      session.then((ready) => job(ready, child)).then(resolve, reject);
    }).finally(() => stop());
  }
}
