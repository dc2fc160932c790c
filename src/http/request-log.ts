import type { RequestHandler } from 'express';
import type { Logger as Pino } from 'pino';
import { pinoHttp } from 'pino-http';
import { currentRequestId } from '../request-scope.ts';
import { outcomeOf } from './request-outcome.ts';

/** Operational endpoints, polled every few seconds: not worth a line each. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per request when it ends: method, path, status, latency, and what it came to (caller's
 * key id, engine, cache, guard, time to first token, tokens; see RequestOutcome). Never a header's
 * value, a prompt or an answer, under `x-service-zdr` or not.
 */
export function requestLog(logger: Pino): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: () => currentRequestId() ?? 'unknown',
    quietReqLogger: true,
    autoLogging: { ignore: (req) => QUIET_PATHS.has((req.url ?? '').split('?')[0]!) },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    customSuccessMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${(req.url ?? '').split('?')[0]} ${res.statusCode}`,
    serializers: {
      req: (req: { method: string; url: string }) => ({ method: req.method, path: req.url.split('?')[0] }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
      err: (err: { message?: string }) => ({ message: err.message }),
    },
    customProps: (_req, res) => {
      const { startedAt: _, ...outcome } = outcomeOf(res as never);
      return { ...outcome, ...(outcome.ttftMs !== undefined ? { ttftMs: Math.round(outcome.ttftMs) } : {}) };
    },
  });
}
