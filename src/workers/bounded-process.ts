import { payloadTooLarge } from '../errors/service-error.ts';
import { Child } from './child.ts';
import type { WorkerLimits } from './isolated-worker.ts';
import { invalidOutput, taskFailed, taskTimedOut } from '../errors/task-errors.ts';

export interface ProcessRun {
  /** Names the engine in errors, e.g. "PDF page rendering". */
  what: string;
  /** Given on stdin; without it, stdin is closed and the program reads a file named in its arguments. */
  input?: Uint8Array;
  limits: Pick<WorkerLimits, 'timeoutMs' | 'memoryMb'>;
  /** Most bytes the program may write to stdout; past it the program is stopped. */
  maxOutputBytes: number;
  /** The deadline of a queued job (JobQueue); without it, `limits.timeoutMs` from now. */
  signal?: AbortSignal;
  /**
   * Whose fault a failed run is: the caller's file (`input`, a 400: a decoder that cannot read it)
   * or the service's (`service`, a 500: a translator has no reason to fail on text).
   */
  blame?: 'input' | 'service';
}

/**
 * Runs a program on a caller's input (through pipes where the format allows), in its own process
 * group under a deadline and an address-space bound (prlimit), and returns what it wrote to
 * stdout. Past the deadline or the output bound the whole group is killed, so a shell's pipeline
 * goes with it and nothing holds the pipes open.
 */
export function runBounded(command: string, args: string[], run: ProcessRun): Promise<Buffer> {
  const memoryBytes = run.limits.memoryMb * 1024 * 1024;
  const child = new Child({ command: 'prlimit', args: [`--as=${memoryBytes}`, '--', command, ...args] });
  const signal = run.signal ?? AbortSignal.timeout(run.limits.timeoutMs);
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let size = 0;
    let failure: Error | undefined;
    const stop = (error: Error) => {
      failure ??= error;
      child.kill();
    };
    const onAbort = () => stop(run.signal ? signal.reason : taskTimedOut(run.what, run.limits.timeoutMs));
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    child.process.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > run.maxOutputBytes) {
        stop(payloadTooLarge('task_output_too_large', `The ${run.what} produced more than ${run.maxOutputBytes} bytes for this input and was stopped.`));
      } else {
        out.push(chunk);
      }
    });
    child.process.stdin.end(run.input);
    child.process.once('error', (err) => stop(taskFailed(run.what, `it could not start: ${err.message}`)));
    child.whenClosed(({ code, signal: killed }) => {
      signal.removeEventListener('abort', onAbort);
      if (failure) return reject(failure);
      if (code === 0) return resolve(Buffer.concat(out));
      const why = killed ? `it was stopped by ${killed} (over TASK_MEMORY_MB?)` : child.lastStderrLine(`exit ${code}`);
      reject(run.blame === 'service' ? taskFailed(run.what, why) : invalidOutput(run.what, why));
    });
  });
}
