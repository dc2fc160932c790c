import type { ErrorType } from '../contract/wire-types.ts';

/** What crosses between an IsolatedWorker and the worker module it runs. */
export interface JobRequest {
  id: number;
  job: string;
  args: unknown[];
}

/** A ServiceError's fields when the job threw one; otherwise only the message. */
export interface WorkerFailure {
  message: string;
  status?: number;
  type?: ErrorType;
  code?: string;
  param?: string | null;
}

export type JobReply = { id: number; result: unknown } | { id: number; failure: WorkerFailure };
