import { AsyncLocalStorage } from 'node:async_hooks';

/** What is known of the request whose work is running now. */
export interface RequestScope {
  readonly requestId: string;
  /** `x-service-zdr`, parsed once when the request arrives: nothing of it is kept, not even in a log's detail. */
  readonly zdr: boolean;
  /** The caller's key id, once authentication has found it. */
  keyId?: string;
}

/**
 * The request whose work is running now, kept across its awaits, timers and listeners
 * (AsyncLocalStorage). The one place the request id is read from: the log lines written during a
 * request carry it (src/logging.ts) however deep they are written (a store's outage warning), and
 * the process-level fault handler names the request a crash came from (src/process/faults.ts).
 */
const scope = new AsyncLocalStorage<RequestScope>();

/** Runs `fn` (the rest of the request's middleware) as the work of this request. */
export const runAsRequest = <T>(request: RequestScope, fn: () => T): T => scope.run(request, fn);

/** The request of the work running now, or undefined outside any request. */
export const currentRequest = (): RequestScope | undefined => scope.getStore();

/** The request id of the work running now, or undefined outside any request. */
export const currentRequestId = (): string | undefined => scope.getStore()?.requestId;

/** Authentication names the caller: its later log lines carry the key id. */
export function setRequestKey(keyId: string): void {
  const request = scope.getStore();
  if (request) request.keyId = keyId;
}
