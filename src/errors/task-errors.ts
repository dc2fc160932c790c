import { invalidRequest, rateLimited, ServiceError, serviceUnavailable } from './service-error.ts';

/** The 503 for work on one file that overran `TASK_TIMEOUT_MS`, whether in a worker or a child process. */
export const taskTimedOut = (what: string, timeoutMs: number) =>
  serviceUnavailable(`The ${what} took longer than ${timeoutMs} ms (TASK_TIMEOUT_MS) and was stopped.`, 'task_timeout');

/** The 503 for a job that found its engine's queue full: the deployment as a whole is busy. */
export const taskQueueFull = (what: string, maxQueued: number) =>
  serviceUnavailable(`The ${what} has ${maxQueued} jobs waiting (TASK_QUEUE_MAX); retry shortly.`, 'task_queue_full', 2);

/** The 429 for a caller that already has its share of an engine's queue: the others are served first. */
export const taskShareExceeded = (what: string, perCaller: number) =>
  rateLimited(`This API key already has ${perCaller} jobs queued for the ${what} (TASK_QUEUE_PER_CALLER); wait for them.`, 1, {});

/** The 500 for an engine that failed (could not start, died): not the caller's fault, so safe to retry. */
export const taskFailed = (what: string, why: string) =>
  new ServiceError(500, 'internal_error', 'task_failed', `The ${what} failed: ${why}. It is safe to retry.`);

/** The 500 for an engine that answered a job with its own error message. */
export const engineAnswered = (message: string) => new ServiceError(500, 'internal_error', 'task_failed', message); // task_failed, in the engine's words

/** The 400 for a program that could not read the caller's file (a decoder, a renderer). */
export const invalidOutput = (what: string, why: string) => invalidRequest(`The ${what} failed: ${why}.`, 'invalid_content');
