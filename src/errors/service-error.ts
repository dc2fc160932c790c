import type { ErrorEnvelope, ErrorType } from '../contract/wire-types.ts';

/**
 * A failure that leaves the service in the spec's error envelope. Its fields are strings by
 * construction, whatever a caller of the constructor passed (a value read from an upstream, a
 * library's error): the envelope, the request log and the metrics read them as strings.
 */
export class ServiceError extends Error {
  readonly type: ErrorType;
  readonly code: string;
  readonly param: string | null;

  constructor(
    readonly status: number,
    type: ErrorType,
    code: string,
    message: string,
    param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof message === 'string' ? message : JSON.stringify(message) ?? String(message));
    this.name = 'ServiceError';
    this.type = (typeof type === 'string' ? type : 'internal_error') as ErrorType;
    this.code = typeof code === 'string' ? code : code == null ? 'internal_error' : String(code);
    this.param = param == null ? null : String(param);
  }

  toEnvelope(): ErrorEnvelope {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

export const invalidRequest = (message: string, code = 'invalid_request', param: string | null = null) =>
  new ServiceError(400, 'invalid_request_error', code, message, param);

export const authenticationFailed = (message: string) =>
  new ServiceError(401, 'authentication_error', 'invalid_api_key', message, null, {
    'WWW-Authenticate': 'Bearer realm="service"',
  });

export const serviceUnavailable = (message: string, code = 'service_unavailable', retryAfterSeconds = 1) =>
  new ServiceError(503, 'service_unavailable', code, message, null, { 'Retry-After': String(retryAfterSeconds) });

export const internalError = (requestId: string) =>
  new ServiceError(500, 'internal_error', 'internal_error', `Internal error (request id ${requestId}). It is safe to retry.`);

export const notFound = (message: string) =>
  new ServiceError(404, 'invalid_request_error', 'unknown_url', message);

export const insufficientQuota = (message: string) =>
  new ServiceError(402, 'insufficient_quota', 'insufficient_quota', message);

export const rateLimited = (message: string, retryAfterSeconds: number, headers: Record<string, string>) =>
  new ServiceError(429, 'rate_limit_error', 'rate_limit_exceeded', message, null, { ...headers, 'Retry-After': String(retryAfterSeconds) });

/** `<guard>` cannot be honoured: no guard on this deployment, or its classifier failed (it never passes unchecked). */
export const guardUnavailable = (message: string) => serviceUnavailable(message, 'guard_unavailable');

/** A caller's URL naming (or resolving to) an address the fetcher may not reach: loopback, private, metadata. */
export const urlNotAllowed = (param: string, address: string) =>
  invalidRequest(`${param}: ${address}, which may not be fetched`, 'url_not_allowed', param);

/** A caller's input over one of the service's bounds (size, length, pixels). */
export const payloadTooLarge = (code: string, message: string, param: string | null = null) =>
  new ServiceError(413, 'payload_too_large', code, message, param);

/** A body sent in a charset other than UTF-8. */
export const unsupportedCharset = (charset: string) =>
  new ServiceError(415, 'invalid_request_error', 'unsupported_charset', `Unsupported charset "${charset}": send the JSON body as UTF-8.`);

/** A body in a Content-Type or Content-Encoding the service does not read. */
export const unsupportedMediaType = (message: string) =>
  new ServiceError(415, 'invalid_request_error', 'unsupported_media_type', message);

/** A known path asked with another method; `headers` carries its `Allow`. */
export const methodNotAllowed = (message: string, headers: Record<string, string> = {}) =>
  new ServiceError(405, 'invalid_request_error', 'method_not_allowed', message, null, headers);

/** A fault on the upstream model's side (its status, its stream, its answer): safe to retry. */
export const upstreamError = (message: string) => new ServiceError(500, 'internal_error', 'upstream_error', message);

/** The upstream model refused the request as the caller's (`upstream_rejected`, or `context_length_exceeded`). */
export const upstreamRejected = (message: string, code: 'upstream_rejected' | 'context_length_exceeded' = 'upstream_rejected') =>
  new ServiceError(400, 'invalid_request_error', code, message);

/** The model's answer did not conform to the requested format after every attempt. */
export const outputValidationFailed = (message: string) =>
  new ServiceError(500, 'internal_error', 'output_validation_failed', message);

/** The mock's front could not reach the Prism mock behind it (src/mock/). */
export const mockUnavailable = (message: string) =>
  new ServiceError(502, 'service_unavailable', 'mock_unavailable', message);

/**
 * A ServiceError that crossed a process boundary as its fields (a worker's answer to a job) made
 * whole again: the code and status are the ones its factory on the other side gave it.
 */
export const revivedError = (fields: { status: number; type: ErrorType; code: string; message: string; param?: string | null }) =>
  new ServiceError(fields.status, fields.type, fields.code, fields.message, fields.param ?? null);
