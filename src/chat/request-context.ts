import type { ChatCompletionRequest } from '../contract/wire-types.ts';
import type { GenerationRequest } from '../engines/engine.ts';
import type { ResolvedAttachment } from '../inputs/attachments.ts';
import type { Caller } from '../keys/caller.ts';
import type { Directives } from './directives.ts';
import type { Meter } from './meter.ts';
import type { Logger } from '../logging.ts';


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
  /** What the request really did, for its bill (set by the quota stage; absent in stage tests without it). */
  readonly meter?: Meter;
}
