import type { RequestHandler } from 'express';
import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import { pinoHttp } from 'pino-http';
import type { Logger } from '../chat/request-context.ts';
import { outcomeOf } from './request-outcome.ts';

/** Operational endpoints, polled every few seconds: not worth a line each. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The service's JSON logger (`LOG_LEVEL`): one JSON object per line, or readable colours when
 * standard output is a terminal. Tests pass a destination to read the lines back.
 */
export function createLogger(level: string, destination?: DestinationStream): Pino {
  const pretty = destination === undefined && process.stdout.isTTY;
  const options = { level, timestamp: pino.stdTimeFunctions.isoTime, base: { pid: process.pid } };
  if (pretty) return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' } } });
  return destination ? pino(options, destination) : pino(options);
}

/**
 * One line per request when it ends: method, path, status, latency, and what it came to (caller's
 * key id, engine, cache, guard, time to first token, tokens; see RequestOutcome). Never a header's
 * value, a prompt or an answer, under `x-service-zdr` or not.
 */
export function requestLog(logger: Pino): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (_req, res) => String(res.getHeader('x-request-id')),
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

/** The service's `log.error`/`log.warn` on the JSON logger; an Error among the arguments is kept whole. */
export function loggerOn(logger: Pino): Logger {
  const write = (level: 'error' | 'warn') => (...args: unknown[]) => {
    const err = args.find((a) => a instanceof Error);
    const message = args.filter((a) => a !== err).map(String).join(' ');
    if (err) logger[level]({ err }, message);
    else logger[level](message);
  };
  return { error: write('error'), warn: write('warn') };
}
