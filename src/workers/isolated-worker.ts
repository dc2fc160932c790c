import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ServiceError } from '../errors/service-error.ts';
import { taskTimedOut } from './task-errors.ts';
import type { JobReply, JobRequest, WorkerFailure } from './worker-protocol.ts';

/** Bounds on one worker: each job's deadline, and the worker's JavaScript heap. */
export interface WorkerLimits {
  /** `TASK_TIMEOUT_MS`: a job still running after this is stopped with its worker. */
  timeoutMs: number;
  /** `TASK_MEMORY_MB`: the worker's heap; a job that needs more ends its worker. */
  memoryMb: number;
}

type Jobs = Record<string, (...args: never[]) => Promise<unknown>>;

interface Pending {
  worker: ChildProcess;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

/**
 * Runs the jobs a worker module exports (see `serveJobs`) in a child process, so that heavy work
 * on a caller's file (decoding, parsing, inference) never blocks the event loop that serves
 * everyone else, and a file that exhausts memory can only kill the child. (A worker thread is not
 * enough: V8 may abort the whole process when a thread passes its heap limit.) A job that overruns
 * its deadline or its memory takes the worker down and gets a 503 or a 413; the next job starts a
 * fresh worker. Jobs run one at a time, in order, so one worker's bounds are this engine's bounds.
 */
export class IsolatedWorker<J extends Jobs> {
  private worker: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private queue: Promise<unknown> = Promise.resolve();

  /** `what` names the engine in errors, e.g. "object detection". */
  constructor(private readonly module: URL, private readonly what: string, private readonly limits: WorkerLimits) {}

  run<K extends keyof J & string>(job: K, ...args: Parameters<J[K]>): Promise<Awaited<ReturnType<J[K]>>> {
    const run = this.queue.then(() => this.send(job, args));
    this.queue = run.catch(() => undefined);
    return run as Promise<Awaited<ReturnType<J[K]>>>;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    worker?.kill();
  }

  private send(job: string, args: unknown[]): Promise<unknown> {
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.stop(worker, taskTimedOut(this.what, this.limits.timeoutMs)), this.limits.timeoutMs);
      this.pending.set(id, { worker, resolve, reject, timer });
      worker.send({ id, job, args } satisfies JobRequest);
    });
  }

  private start(): ChildProcess {
    const worker = fork(fileURLToPath(this.module), [], {
      // The same loader that runs this TypeScript, and the heap bound.
      execArgv: ['--import', 'tsx', `--max-old-space-size=${this.limits.memoryMb}`],
      serialization: 'advanced', // Buffers cross as bytes, not as JSON arrays
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    worker.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-2000)));
    worker.on('message', (reply: JobReply) => this.settle(reply));
    worker.on('error', (err) => this.stop(worker, failed(this.what, err.message)));
    worker.on('exit', (code, signal) => {
      this.stop(worker, /heap out of memory/i.test(stderr)
        ? new ServiceError(413, 'payload_too_large', 'task_memory_exceeded',
          `The ${this.what} needed more than ${this.limits.memoryMb} MB (TASK_MEMORY_MB) for this input and was stopped.`)
        : failed(this.what, `its worker exited (${signal ?? `code ${code}`})`));
    });
    this.idle(worker);
    return worker;
  }

  /**
   * An idle worker must not keep the process alive; a busy one does, through its job's timer. Its
   * process, its IPC channel and its stderr pipe are each a handle of their own.
   */
  private idle(worker: ChildProcess): void {
    worker.unref();
    (worker.channel as { unref?(): void } | undefined)?.unref?.();
    (worker.stderr as { unref?(): void } | null)?.unref?.();
  }

  private settle(reply: JobReply): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    clearTimeout(pending.timer);
    if ('failure' in reply) pending.reject(revive(reply.failure, this.what));
    else pending.resolve(reply.result);
  }

  /** Fails every job on `worker` with `error` and ends it; the next job starts a new one. */
  private stop(worker: ChildProcess, error: ServiceError): void {
    if (this.worker === worker) this.worker = undefined;
    for (const [id, pending] of this.pending) {
      if (pending.worker !== worker) continue;
      clearTimeout(pending.timer);
      pending.reject(error);
      this.pending.delete(id);
    }
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
  }
}

const failed = (what: string, why: string) =>
  new ServiceError(500, 'internal_error', 'task_failed', `The ${what} failed: ${why}. It is safe to retry.`);

/** A job's own ServiceError (a 400 for an unreadable file) crosses back as it was. */
function revive(failure: WorkerFailure, what: string): ServiceError {
  if (failure.status !== undefined) {
    return new ServiceError(failure.status, failure.type!, failure.code!, failure.message, failure.param ?? null);
  }
  return failed(what, failure.message);
}
