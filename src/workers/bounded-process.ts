import { spawn } from 'node:child_process';
import { ServiceError } from '../errors/service-error.ts';
import type { WorkerLimits } from './isolated-worker.ts';
import { taskTimedOut } from './task-errors.ts';

export interface ProcessRun {
  /** Names the engine in errors, e.g. "PDF page rendering". */
  what: string;
  /** Given on stdin; without it, stdin is closed and the program reads a file named in its arguments. */
  input?: Uint8Array;
  limits: WorkerLimits;
  /** Most bytes the program may write to stdout; past it the program is stopped. */
  maxOutputBytes: number;
}

/**
 * Runs a program on a caller's file (through pipes where the format allows), with a deadline and
 * an address-space bound (prlimit), and returns what it wrote to stdout. Its failure is the
 * caller's file's fault, a 400, unless the program overran a bound.
 */
export function runBounded(command: string, args: string[], run: ProcessRun): Promise<Buffer> {
  const memoryBytes = run.limits.memoryMb * 1024 * 1024;
  const child = spawn('prlimit', [`--as=${memoryBytes}`, '--', command, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: ServiceError | undefined;
    const stop = (error: ServiceError) => {
      failure ??= error;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop(taskTimedOut(run.what, run.limits.timeoutMs)), run.limits.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > run.maxOutputBytes) {
        stop(new ServiceError(413, 'payload_too_large', 'task_output_too_large',
          `The ${run.what} produced more than ${run.maxOutputBytes} bytes for this input and was stopped.`));
      } else {
        out.push(chunk);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-500)));
    child.stdin.on('error', () => {}); // a program that exits early closes its stdin: its exit code says why
    child.stdin.end(run.input);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new ServiceError(500, 'internal_error', 'task_failed', `The ${run.what} could not start: ${err.message}.`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) return reject(failure);
      if (code === 0) return resolve(Buffer.concat(out));
      const why = signal ? `was stopped by ${signal} (over TASK_MEMORY_MB?)` : `failed: ${stderr.trim().split('\n').at(-1) ?? `exit ${code}`}`;
      reject(new ServiceError(400, 'invalid_request_error', 'invalid_content', `The ${run.what} ${why}.`));
    });
  });
}
