import type { RequestHandler } from 'express';
import type { Logger as Pino } from 'pino';
import { requestIdOf } from '../request-scope.ts';
import { outcomeOf } from './request-outcome.ts';

/** Operational endpoints, polled every few seconds: not worth a line each. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * One line per request when it ends: method, path, status, latency, and what it came to (caller's
 * key id, engine, cache, guard, time to first token, tokens; see RequestOutcome). Never a header's
 * value, a prompt or an answer, under `x-service-zdr` or not.
 *
 * Written with one call on the service's logger when the response ends. pino-http, used before,
 * made three child loggers per request (and a fourth at its end) whose bindings were serialised
 * each time, about 8% of the CPU of a request on the gateway bench; the line is the same.
 */
export function requestLog(logger: Pino): RequestHandler {
  return function requestLog(req, res, next) {
    const path = (req.url ?? '').split('?')[0]!;
    if (QUIET_PATHS.has(path)) return next();
    const reqId = requestIdOf(res);
    const outcome = outcomeOf(res); // stamps the start, as the first middleware to read it
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      const status = res.statusCode;
      const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const { startedAt, ...came } = outcome;
      const line = {
        reqId,
        req: { method: req.method, path },
        ...came,
        ...(came.ttftMs !== undefined ? { ttftMs: Math.round(came.ttftMs) } : {}),
        res: { status },
        ...(status >= 500 ? { err: { message: `failed with status code ${status}` } } : {}),
        responseTime: Math.round(performance.now() - startedAt),
      };
      logger[level](line, `${req.method} ${path} ${status}`);
    };
    // 'finish' when the answer was written whole, 'close' when the client left first: one line either way.
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}
