import type { Request, Response } from 'express';
import { readDirectives, withoutDirectives } from '../chat/directives.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import type { RequestContext, RequestFlags } from '../chat/request-context.ts';
import type { Logger } from '../logging.ts';
import type { ChatCompletionRequest } from '../contract/wire-types.ts';
import type { GenerationRequest } from '../engines/engine.ts';
import type { SchemaLimits } from '../engines/schema-budget.ts';
import type { Caller } from '../keys/caller.ts';
import { type AttachmentLimits, resolveAttachments } from '../inputs/attachments.ts';
import { currentRequest, currentRequestId } from '../http/request-scope.ts';

/** A boolean header; the contract validator has already turned a valid one into a boolean. */
const flag = (req: Request, name: string) => String(req.headers[name] as unknown).toLowerCase() === 'true';

export function flagsOf(req: Request): RequestFlags {
  return {
    zdr: currentRequest()?.zdr ?? false, // parsed once, when the request arrived
    bypassCache: flag(req, 'x-service-bypass-cache'),
    bypassMoa: flag(req, 'x-service-bypass-moa'),
    showAdditionalInfo: flag(req, 'x-show-additional-info'),
    reasoningDelta: flag(req, 'x-service-reasoning-delta'),
  };
}

/**
 * The context of one validated request: who calls (put there by auth), its flags, its directives
 * and the engine's form of it, and an abort signal that fires when the client goes away before
 * the answer is complete, streamed or not.
 */
export function createRequestContext(req: Request, res: Response, deps: { log: Logger; attachmentLimits: AttachmentLimits; schemaLimits?: SchemaLimits }): RequestContext {
  const body = req.body as ChatCompletionRequest;
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort(new Error('client disconnected'));
  });
  return {
    requestId: currentRequestId() ?? 'unknown',
    caller: res.locals.caller as Caller,
    flags: flagsOf(req),
    signal: abort.signal,
    log: deps.log,
    body,
    generation: withoutDirectiveTags(normalizeRequest(body, abort.signal, deps.schemaLimits)),
    directives: readDirectives(body.messages),
    attachments: once(() => resolveAttachments(body.messages, deps.attachmentLimits, abort.signal)),
  };
}

/** `make()` on the first call; the same promise after. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}

/** The engine's request with the directives taken out of its system messages (and those left empty). */
function withoutDirectiveTags(generation: GenerationRequest): GenerationRequest {
  const messages = generation.messages
    .map((m) => (m.role === 'system' ? { ...m, content: withoutDirectives(m.content) } : m))
    .filter((m) => m.role !== 'system' || m.content !== '');
  return { ...generation, messages };
}
