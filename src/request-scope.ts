import type { Response } from 'express';

/** What is known of a request in flight. */
export interface RequestScope {
  readonly requestId: string;
  /** `x-service-zdr`, parsed once when the request arrives: nothing of it is kept, not even in a log's detail. */
  readonly zdr: boolean;
  /** The caller's key id, once authentication has found it. */
  keyId?: string;
}

/**
 * Each request's scope travels with its response (`res.locals`), and each layer that logs for it
 * is handed it: the request log, the error handler, the pipeline's context (its `log` names the
 * request, src/logging.ts). Not AsyncLocalStorage: on Node 20 that keeps its store through a
 * promise hook that runs for every promise the process makes, which cost a tenth of a request's
 * CPU on the gateway bench and a sixth of a stream's (README, "The gateway path").
 */
const inFlight = new Set<RequestScope>();

/** The request starts: its scope is on `res` until the response closes. */
export function beginRequest(res: Response, request: RequestScope): void {
  res.locals.request = request;
  inFlight.add(request);
  res.once('close', () => inFlight.delete(request));
}

/** The scope of the request `res` answers (undefined before `beginRequest`). */
export const requestOf = (res: Response): RequestScope | undefined => res.locals.request as RequestScope | undefined;

/** The id of the request `res` answers, as logs and error messages name it. */
export const requestIdOf = (res: Response): string => requestOf(res)?.requestId ?? 'unknown';

/** Authentication names the caller: the request's later log lines carry the key id. */
export function setRequestKey(res: Response, keyId: string): void {
  const request = requestOf(res);
  if (request) request.keyId = keyId;
}

/** The ids of the requests in flight now, oldest first: what a process fault names (src/process/faults.ts). */
export const requestsInFlight = (): string[] => [...inFlight].map((request) => request.requestId);
