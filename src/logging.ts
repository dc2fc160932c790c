import { pino, type DestinationStream, type Logger as Pino } from 'pino';
import type { RequestScope } from './request-scope.ts';

/**
 * The service's one logger type, passed down from main.ts: `warn` and `error` take console-style
 * arguments, so `console` and a test's recorder fit it too. Made by `loggerOn` from the JSON logger.
 */
export interface Logger {
  error(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  /** The same log, its lines naming `request` (reqId, and keyId once known); a console has none. */
  forRequest?(request: RequestScope): Logger;
}

/** `log` naming `request` when it can (src/request-scope.ts), else `log` itself. */
export const logFor = (log: Logger, request: RequestScope | undefined): Logger =>
  (request && log.forRequest?.(request)) || log;

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
 * `Logger` on the JSON logger. Its `forRequest` writes through that request's child logger
 * (`reqId`, and `keyId` once known), made when the request's first line is written: a stage's
 * warning, the error handler's. What happens below the request that knows nothing of it (a Redis
 * outage, a lock) is logged as the process's; the request it failed logs its own line with the
 * cause (src/http/errors.ts). An Error among the arguments is kept whole.
 */
export function loggerOn(logger: Pino): Logger {
  const children = new WeakMap<RequestScope, { keyId: string | undefined; child: Pino }>();
  const target = (request: RequestScope | undefined): Pino => {
    if (!request) return logger;
    let made = children.get(request);
    if (!made || made.keyId !== request.keyId) {
      const bindings = request.keyId === undefined ? { reqId: request.requestId } : { reqId: request.requestId, keyId: request.keyId };
      made = { keyId: request.keyId, child: logger.child(bindings) };
      children.set(request, made);
    }
    return made.child;
  };
  const on = (request?: RequestScope): Logger => {
    const write = (level: 'error' | 'warn') => (...args: unknown[]) => {
      const err = args.find((a) => a instanceof Error);
      const message = args.filter((a) => a !== err).map(String).join(' ');
      if (err) target(request)[level]({ err }, message);
      else target(request)[level](message);
    };
    return { error: write('error'), warn: write('warn'), forRequest: on };
  };
  return on();
}
