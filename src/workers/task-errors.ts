import { serviceUnavailable } from '../errors/service-error.ts';

/** The 503 for work on one file that overran `TASK_TIMEOUT_MS`, whether in a worker or a child process. */
export const taskTimedOut = (what: string, timeoutMs: number) =>
  serviceUnavailable(`The ${what} took longer than ${timeoutMs} ms (TASK_TIMEOUT_MS) and was stopped.`, 'task_timeout');
