import { ServiceError, upstreamError, upstreamRejected } from '../errors/service-error.ts';

/*
 * An upstream's answer is JSON of any shape: llama.cpp and vLLM send a numeric error `code`,
 * some send arguments as an object, a buggy one a number where text belongs. Every field the
 * upstream engine takes is read through these, as the type the service uses or as absent, so
 * nothing of the upstream's shape travels further (issue 21, finding 1).
 */

/** A string field, or absent. */
export const textOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** A token count: a non-negative integer, else 0 (nothing is billed on a count that is not one). */
export const countOf = (value: unknown): number => (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0);

/** A tool call's arguments: JSON text; an object some upstreams send is written as JSON text. */
export function argumentsOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return '';
}

/** Tool calls one answer may hold: an index past it would make a sparse array of that length. */
export const MAX_TOOL_CALLS = 128;

/** A tool call's index in the answer, or undefined when it is not a small non-negative integer. */
export function toolIndexOf(value: unknown): number | undefined {
  if (value === undefined) return 0;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < MAX_TOOL_CALLS ? value : undefined;
}

/** The longest upstream message quoted to a caller: enough to say what was wrong, not a page. */
export const MAX_UPSTREAM_MESSAGE = 500;

/** Text for a caller: a string kept (bounded), anything else written as JSON (bounded). */
export function boundedMessage(value: unknown, fallback: string): string {
  const text = typeof value === 'string' ? value : value === undefined || value === null ? fallback : JSON.stringify(value) ?? fallback;
  // Control characters (a terminal's escapes, NULs) have no place in an error message.
  const clean = text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ').trim() || fallback;
  return clean.length > MAX_UPSTREAM_MESSAGE ? `${clean.slice(0, MAX_UPSTREAM_MESSAGE)}…` : clean;
}

interface UpstreamErrorFields {
  message: unknown;
  code: unknown;
  type: unknown;
}

/**
 * The error in an upstream's body, wherever it sits: `{"error":{…}}` (OpenAI, llama.cpp, recent
 * vLLM), `{"error":"…"}`, or at the top level with `"object":"error"` (older vLLM).
 */
export function errorFieldsOf(parsed: unknown): UpstreamErrorFields | undefined {
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const body = parsed as Record<string, unknown>;
  const inner = body.error;
  if (typeof inner === 'string') return { message: inner, code: undefined, type: undefined };
  if (inner !== null && typeof inner === 'object') {
    const e = inner as Record<string, unknown>;
    return { message: e.message, code: e.code, type: e.type };
  }
  if (inner !== undefined && inner !== null) return { message: inner, code: undefined, type: undefined };
  if (body.object === 'error') return { message: body.message, code: body.code, type: body.type };
  return undefined;
}

/**
 * Whether the upstream refused for the context window. The contract's code for it is
 * `context_length_exceeded`; upstreams say it as OpenAI's code, llama.cpp's type
 * `exceed_context_size_error`, or only in words (vLLM: "maximum context length is …").
 */
function isContextLength(fields: UpstreamErrorFields, message: string): boolean {
  return fields.code === 'context_length_exceeded' || fields.type === 'exceed_context_size_error'
    || /\b(maximum context length|context (length|size|window))\b/i.test(message);
}

/**
 * A request the upstream refused (its 400, 413 or 422), as the service's own 400: one of the
 * contract's codes (`context_length_exceeded` or `upstream_rejected`), never the upstream's code
 * or type, and its message quoted, bounded.
 */
export function upstreamRejection(fields: UpstreamErrorFields | undefined, text: string): ServiceError {
  const detail = boundedMessage(fields ? fields.message : text, 'no reason given');
  const code = fields && isContextLength(fields, detail) ? 'context_length_exceeded' : 'upstream_rejected';
  return upstreamRejected(`The upstream model rejected the request: ${detail}`, code);
}

/** An error event in the middle of an upstream's stream: a fault on the upstream's side. */
export function upstreamStreamFailure(fields: UpstreamErrorFields): ServiceError {
  return upstreamError(`The upstream model failed: ${boundedMessage(fields.message, 'unknown error')}`);
}
