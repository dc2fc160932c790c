import type { ErrorRequestHandler, Request, Response } from 'express';
import { recordError } from './request-outcome.ts';
import { answerOf } from '../errors/answer-of.ts';
import { internalError, invalidRequest, methodNotAllowed, notFound, payloadTooLarge, type ServiceError, unsupportedMediaType } from '../errors/service-error.ts';
import { requestIdOf, requestOf } from '../request-scope.ts';
import { logFor, type Logger } from '../logging.ts';

/** Shape of errors thrown by body-parser and express-openapi-validator (both carry an HTTP status). */
interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  limit?: number;
  /** http-errors marks a message safe to show the caller. */
  expose?: boolean;
  headers?: Record<string, string>;
  errors?: { path?: string; message?: string }[];
}

/**
 * The ONE mapping from any failure to the error envelope. The service's own errors carry their
 * answer (src/errors/answer-of.ts); what is mapped here are its libraries' errors (body-parser,
 * express-openapi-validator, Express's router); anything unrecognised becomes a 500 whose body
 * hides the cause (and names `requestId`, for the caller to quote).
 */
export function toServiceError(err: unknown, requestId: string, url = ''): ServiceError {
  const own = answerOf(err);
  if (own) return own;
  if (typeof err !== 'object' || err === null) return internalError(requestId);
  const e = err as HttpLikeError;
  const status = e.status ?? e.statusCode;

  if (e.type === 'entity.parse.failed') {
    return invalidRequest(`The body is not valid JSON: ${e.message ?? 'parse error'}`, 'invalid_json');
  }
  if (e.type === 'entity.too.large' || status === 413) {
    const limit = e.limit ? ` of ${e.limit} bytes` : '';
    return payloadTooLarge('payload_too_large', `The request body exceeds the limit${limit}.`);
  }
  if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
    return unsupportedMediaType(e.message ?? 'Unsupported encoding.');
  }
  if (status === 400 && Array.isArray(e.errors)) return fromValidationErrors(e.errors);
  // body-parser's other 400s (a body that does not inflate, a stream cut short) say what went wrong.
  if (status === 400 && e.expose) return invalidRequest(`The body could not be read: ${e.message ?? 'bad request'}`, 'invalid_body');
  if (status === 415) {
    return unsupportedMediaType(
      `Unsupported Content-Type: send the body as application/json (${e.message ?? ''}).`);
  }
  if (status === 405) {
    return methodNotAllowed(e.message ?? 'Method not allowed.', e.headers ?? {});
  }
  if (status === 404) return notFound(`Unknown URL: ${url}`);
  return internalError(requestId);
}

/** The validator's paths look like `/body/messages/0/content`; callers know `messages.0.content`. */
function fromValidationErrors(errors: { path?: string; message?: string }[]): ServiceError {
  const field = (path = '') => path.replace(/^\/?(body|headers)\/?/, '').replaceAll('/', '.');
  const messages = errors.map((x) => `${field(x.path) || 'body'}: ${x.message ?? 'is invalid'}`);
  const param = field(errors[0]?.path).split('.')[0] || null;
  return invalidRequest(`Invalid request: ${messages.join('; ')}`, 'invalid_request', param);
}

export function sendError(res: Response, error: ServiceError): void {
  recordError(res, error);
  res.set(error.headers).status(error.status).json(error.toEnvelope());
}

/**
 * Logs a 500, and a store outage (503 `store_unavailable`: what the operator must fix), with its
 * cause, under the request's id and key id (src/logging.ts). The cause (which may quote the
 * request or the answer) is left out for a request that asked for zero data retention: its log
 * line is metadata only.
 */
export function logFailure(log: Logger, req: Request, res: Response, error: ServiceError, cause: unknown, when = ''): void {
  const level = error.status === 500 ? 'error' : error.code === 'store_unavailable' ? 'warn' : undefined;
  if (!level) return;
  const request = requestOf(res);
  const detail = request?.zdr ? `${error.code} (zero data retention: no detail kept)` : cause;
  logFor(log, request)[level](`${req.method} ${req.originalUrl} failed${when}:`, detail);
}

/** Express's last middleware: maps, logs 500s with their request id, answers. */
export function createErrorHandler(log: Logger): ErrorRequestHandler {
  return function errorHandler(err, req, res, _next) {
    const error = toServiceError(err, requestIdOf(res), `${req.method} ${req.path}`);
    logFailure(log, req, res, error, err);
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, error);
  };
}
