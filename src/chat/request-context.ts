import type { ChatCompletionRequest } from '../contract/wire-types.ts';
import type { GenerationRequest } from '../engines/engine.ts';
import type { SchemaLimits } from '../engines/schema-budget.ts';
import { type AttachmentLimits, type ResolvedAttachment, resolveAttachments } from '../inputs/attachments.ts';
import type { Caller } from '../keys/caller.ts';
import type { Logger } from '../logging.ts';
import { type Directives, readDirectives, withoutDirectives } from './directives.ts';
import { Meter } from './meter.ts';
import { normalizeRequest } from './normalize-request.ts';


/** The request headers that change how a completion is made (all default to false). */
export interface RequestFlags {
  /** `x-service-zdr`: nothing of the request or answer is kept anywhere. */
  zdr: boolean;
  /** `x-service-bypass-cache`: the verified cache is neither read nor written. */
  bypassCache: boolean;
  /** `x-service-bypass-moa`: attachments go to no internal task; only the model answers. */
  bypassMoa: boolean;
  /** `x-show-additional-info`: a stream sends the precontext first. */
  showAdditionalInfo: boolean;
  /** `x-service-reasoning-delta`: a stream sends reasoning in `delta.reasoning_content`, not in `<think>` tags. */
  reasoningDelta: boolean;
}

/** Everything the pipeline's stages know about one request, built once by the handler. */
export interface RequestContext {
  readonly requestId: string;
  readonly caller: Caller;
  readonly flags: RequestFlags;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** The request as the caller sent it, validated against the contract. */
  readonly body: ChatCompletionRequest;
  /** The same request as engines take it; a stage may hand the next one a changed copy. */
  readonly generation: GenerationRequest;
  readonly directives: Directives;
  /** The request's images and files, decoded or fetched and checked once, on first use. */
  readonly attachments: () => Promise<ResolvedAttachment[]>;
  /**
   * What the request really did, for its bill: made with the context, so the handler reads the
   * settled charge when the request ends (absent in stage tests that build a context by hand).
   */
  readonly meter?: Meter;
}

/** What the HTTP handler knows of a validated request (src/api/create-chat-completion.ts). */
export interface RequestInput {
  requestId: string;
  caller: Caller;
  /** The request's headers; the contract validator has already turned a valid flag into a boolean. */
  headers: Record<string, unknown>;
  /** `x-service-zdr`, parsed once when the request arrived (src/request-scope.ts). */
  zdr: boolean;
  body: ChatCompletionRequest;
  /** Aborted when the client goes away before the answer is complete. */
  signal: AbortSignal;
}

/** A boolean header. */
const flag = (headers: Record<string, unknown>, name: string) => String(headers[name]).toLowerCase() === 'true';

export function flagsOf(headers: Record<string, unknown>, zdr: boolean): RequestFlags {
  return {
    zdr,
    bypassCache: flag(headers, 'x-service-bypass-cache'),
    bypassMoa: flag(headers, 'x-service-bypass-moa'),
    showAdditionalInfo: flag(headers, 'x-show-additional-info'),
    reasoningDelta: flag(headers, 'x-service-reasoning-delta'),
  };
}

/**
 * The context of one validated request, built once: who calls, its flags, its directives and the
 * engine's form of it, and its attachments, resolved on first use.
 */
export function createRequestContext(input: RequestInput, deps: { log: Logger; attachmentLimits: AttachmentLimits; schemaLimits?: SchemaLimits }): RequestContext {
  const { body, signal } = input;
  return {
    requestId: input.requestId,
    caller: input.caller,
    flags: flagsOf(input.headers, input.zdr),
    signal,
    log: deps.log,
    body,
    generation: { ...withoutDirectiveTags(normalizeRequest(body, signal, deps.schemaLimits)), ...promptCacheScopeOf(input) },
    directives: readDirectives(body.messages),
    attachments: once(() => resolveAttachments(body.messages, deps.attachmentLimits, signal)),
    meter: new Meter(),
  };
}

/** The model may reuse its reading of the key's own earlier prompts, never another key's, nor keep a zero-data-retention one's. */
const promptCacheScopeOf = ({ caller, zdr }: RequestInput) => (zdr ? {} : { promptCacheScope: caller.keyId });

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
