import type { Response } from 'express';

/**
 * What one request came to, gathered as it is served, for its log line and the metrics. Metadata
 * only: never a prompt, an answer or a header's value.
 */
export interface RequestOutcome {
  /** When the request reached the first middleware (performance.now()). */
  startedAt: number;
  /** The caller's key id (`key_…`, or `env`). */
  keyId?: string;
  /** What answered: `local`, `upstream`, `task:ocr`, `cache`, `guard`. */
  engine?: string;
  stream?: boolean;
  /** The verified cache: an answer served from it, one looked up and not found, or not looked up. */
  cache?: 'hit' | 'miss' | 'bypass';
  /** The guard's verdicts: the codes matched (none: passed); absent when the request was not guarded. */
  guardMatched?: string[];
  /** From the start of the request to the first text, reasoning or tool call. */
  ttftMs?: number;
  promptTokens?: number;
  completionTokens?: number;
  /** The error sent, as a status or as the in-stream error frame. */
  error?: { type: string; code: string };
  zdr?: boolean;
}

/**
 * How a request ended, for its charge: its answer whole (`usage` says the charge), its client
 * gone before the end, or an error sent (neither gets `usage`, so its charge is known only from
 * the metrics' `service_credits_charged`).
 */
export type RequestEnd = 'answered' | 'client_left' | 'failed';

/**
 * Notes the error sent. Its type and code are copied as strings whatever they hold, so the
 * listeners that read the record when the response closes (metrics, request log) cannot meet
 * another shape (issue 21, finding 1: a numeric code crashed the process there).
 */
export function recordError(res: Response, error: { type: unknown; code: unknown }): void {
  outcomeOf(res).error = { type: String(error.type), code: String(error.code) };
}

/** The request's outcome record, made on first use (by the first middleware, which stamps the start). */
export function outcomeOf(res: Response): RequestOutcome {
  return (res.locals.outcome ??= { startedAt: performance.now() }) as RequestOutcome;
}
