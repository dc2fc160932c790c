import { requestsInFlight } from '../request-scope.ts';

export type FaultKind = 'uncaughtException' | 'unhandledRejection';

export interface FaultPolicy {
  /** Writes the fault as one JSON line (pino's `fatal`). */
  log: { fatal(fields: Record<string, unknown>, message: string): void };
  /** Stops taking requests, lets those in flight end (SHUTDOWN_GRACE_MS), closes; main.ts's shutdown. */
  drain(reason: string): Promise<void>;
  exit(code: number): void;
  /** The latest exit, should draining itself hang. */
  deadlineMs: number;
}

/** The exit code of a process that ended on a fault; a supervisor restarts it. */
export const FAULT_EXIT_CODE = 1;

/** How many request ids a fault's line names (its count says how many more there were). */
const NAMED_REQUESTS = 50;

/**
 * The process-level policy for an exception nothing caught and a rejected promise nothing
 * handled. Either means some state is no longer what the code believes (a half-run listener, a
 * request that will never end), so the process does not go on serving: it logs the fault as
 * JSON with the requests in flight (the fault is one's, or no request's: no async context is kept
 * to tell which, see src/request-scope.ts), drains — no new request, those in
 * flight end with their answer, their error frame or a 503 — and exits 1 for its supervisor
 * (systemd, Kubernetes, Docker's restart policy) to start a clean one. A second fault while
 * draining is logged too; the drain is not started again. See README, "Process faults".
 */
export function createFaultHandler(policy: FaultPolicy): (kind: FaultKind, error: unknown) => void {
  let draining = false;
  return (kind, error) => {
    const ids = requestsInFlight();
    const named = ids.slice(0, NAMED_REQUESTS);
    const more = ids.length > named.length ? ` and ${ids.length - named.length} more` : '';
    policy.log.fatal({ kind, err: error, requestsInFlight: named, requestsInFlightCount: ids.length },
      `${kind} with ${ids.length} requests in flight${named.length ? ` (${named.join(', ')}${more})` : ''}: draining, then exiting with ${FAULT_EXIT_CODE} for the supervisor to restart the service`);
    if (draining) return;
    draining = true;
    process.exitCode = FAULT_EXIT_CODE; // however the process ends from here on
    const deadline = setTimeout(() => policy.exit(FAULT_EXIT_CODE), policy.deadlineMs);
    policy.drain(kind).catch(() => {}).finally(() => {
      clearTimeout(deadline);
      policy.exit(FAULT_EXIT_CODE);
    });
  };
}

/** Installs `handle` for both kinds of fault on this process. */
export function installFaultHandler(handle: (kind: FaultKind, error: unknown) => void): void {
  process.on('uncaughtException', (error) => handle('uncaughtException', error));
  process.on('unhandledRejection', (reason) => handle('unhandledRejection', reason));
}
