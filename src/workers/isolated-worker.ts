import { payloadTooLarge, revivedError, ServiceError } from '../errors/service-error.ts';
import type { Child } from './child.ts';
import { RUNS_BUILD, runnableModule } from '../project-files.ts';
import type { QueueLimits } from './job-queue.ts';
import { Supervisor } from './supervisor.ts';
import { taskFailed, taskTimedOut } from '../errors/task-errors.ts';
import type { JobReply, JobRequest, WorkerFailure } from './worker-protocol.ts';

/** Bounds on one worker: each job's deadline, the worker's JavaScript heap, and its queue. */
export interface WorkerLimits extends QueueLimits {
  /** `TASK_TIMEOUT_MS`: a job still unfinished this long after it was queued is stopped with its worker. */
  timeoutMs: number;
  /** `TASK_MEMORY_MB`: the worker's heap; a job that needs more ends its worker. */
  memoryMb: number;
}

type Jobs = Record<string, (...args: never[]) => Promise<unknown>>;

/**
 * Runs the jobs a worker module exports (see `serveJobs`) in a child process, so that heavy work
 * on a caller's file (decoding, parsing, inference) never blocks the event loop that serves
 * everyone else, and a file that exhausts memory can only kill the child. (A worker thread is not
 * enough: V8 may abort the whole process when a thread passes its heap limit.) The Supervisor
 * owns the child's life and the queue; this says what to run and how jobs cross (IPC messages).
 * A job over its memory gets a 413, over its deadline a 503, a worker that dies a 500.
 */
export class IsolatedWorker<J extends Jobs> {
  private readonly supervisor: Supervisor<void>;
  private nextId = 0;

  /** `what` names the engine in errors, e.g. "object detection". */
  constructor(module: URL, what: string, limits: WorkerLimits) {
    this.supervisor = new Supervisor({
      what, limits,
      child: {
        // Run as this process runs (the build, or the sources through tsx), with the heap bound.
        command: process.execPath,
        args: [...(RUNS_BUILD ? [] : ['--import', 'tsx']), `--max-old-space-size=${limits.memoryMb}`, runnableModule(module)],
        ipc: true,
      },
      ready: async () => {},
      failures: {
        start: (why) => taskFailed(what, `its worker could not start: ${why}`),
        exit: (child, code, signal) => /heap out of memory/i.test(child.stderrTail())
          ? payloadTooLarge('task_memory_exceeded', `The ${what} needed more than ${limits.memoryMb} MB (TASK_MEMORY_MB) for this input and was stopped.`)
          : taskFailed(what, `its worker exited (${signal ?? `code ${code}`})`),
        timeout: () => taskTimedOut(what, limits.timeoutMs),
      },
    });
  }

  run<K extends keyof J & string>(job: K, ...args: Parameters<J[K]>): Promise<Awaited<ReturnType<J[K]>>> {
    return this.runFor(undefined, job, ...args);
  }

  /** `run`, counted against `caller`'s share of the queue (an API key id). */
  runFor<K extends keyof J & string>(caller: string | undefined, job: K, ...args: Parameters<J[K]>): Promise<Awaited<ReturnType<J[K]>>> {
    const what = this.supervisor.what;
    return this.supervisor.run(caller, (_, child) => call(child, { id: this.nextId++, job, args }, what)) as Promise<Awaited<ReturnType<J[K]>>>;
  }

  /** Starts the worker process ahead of the first job. */
  async warm(): Promise<void> {
    await this.supervisor.warm();
  }

  close(): Promise<void> {
    return this.supervisor.close();
  }
}

/** Sends one job over the worker's IPC channel and waits for its reply. */
function call(child: Child, request: JobRequest, what: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onReply = (reply: JobReply) => {
      if (reply.id !== request.id) return;
      child.process.off('message', onReply);
      if ('failure' in reply) reject(revive(reply.failure, what));
      else resolve(reply.result);
    };
    child.process.on('message', onReply);
    child.process.send(request);
  });
}

/** A job's own ServiceError (a 400 for an unreadable file) crosses back as it was. */
function revive(failure: WorkerFailure, what: string): ServiceError {
  if (failure.status !== undefined) {
    return revivedError({ ...failure, status: failure.status, type: failure.type!, code: failure.code! });
  }
  return taskFailed(what, failure.message);
}
