import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request whose work is running now, kept across its awaits, timers and listeners
 * (AsyncLocalStorage). Read where no `req` is at hand: the process-level fault handler names the
 * request a crash came from (src/process/faults.ts).
 */
const scope = new AsyncLocalStorage<{ requestId: string }>();

/** Runs `fn` (the rest of the request's middleware) as the work of `requestId`. */
export const runAsRequest = <T>(requestId: string, fn: () => T): T => scope.run({ requestId }, fn);

/** The request id of the work running now, or undefined outside any request. */
export const currentRequestId = (): string | undefined => scope.getStore()?.requestId;
