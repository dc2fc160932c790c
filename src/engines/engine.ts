import type { FinishReason, ReasoningEffort, ToolCall } from '../contract/wire-types.ts';
import type { CompiledSchema } from './json-schema.ts';

/** A conversation turn as engines see it: content flattened to text, roles normalised. */
export interface EngineMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** The message's images as data URLs, for an engine that `readsImages`. */
  images?: string[];
  /**
   * Its index in the request's `messages`, which its attachments name (`messages[i]…`): kept when
   * a message before it is left out (a system message of directives alone).
   */
  at?: number;
}

export type EngineToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** Plain text, or JSON text that must validate against a schema (`json_object` is `{type: object}`). */
export type OutputFormat = { kind: 'text' } | { kind: 'json'; name: string; schema: CompiledSchema };

export interface EngineTool {
  name: string;
  description?: string;
  parameters: CompiledSchema;
}

export interface GenerationRequest {
  messages: EngineMessage[];
  /** Most tokens to generate; `undefined` means "what the context window leaves". */
  maxTokens?: number;
  /** Unset: the engine's own default (the local engine's sampling defaults, the upstream's). */
  temperature?: number;
  topP?: number;
  stop: string[];
  seed?: number;
  output: OutputFormat;
  tools: EngineTool[];
  toolChoice: EngineToolChoice;
  parallelToolCalls: boolean;
  reasoningEffort?: ReasoningEffort;
  /**
   * The caller reads the answer as it is made. When false only the whole answer is read, and an
   * engine may make it in one piece (an upstream is then asked for one JSON answer, not a stream).
   */
  stream: boolean;
  signal: AbortSignal;
  /**
   * Whose earlier prompts this request may reuse the model's cached reading of: its API key's. Unset:
   * nobody's, and its own is not kept (zero data retention, the service's own calls). A prompt read
   * faster because another tenant sent the same words would tell that they did.
   */
  promptCacheScope?: string;
}

/** The text a request gives the model to read, as the reservation counts it: every message and every tool's definition. */
export function promptText(request: Pick<GenerationRequest, 'messages' | 'tools'>): string {
  return [
    ...request.messages.map((m) => m.content),
    ...request.tools.map((t) => JSON.stringify({ name: t.name, description: t.description, parameters: t.parameters.schema })),
  ].join('\n');
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Units of task work (pages read, seconds of audio…; src/chat/prices.ts), where tasks ran. */
  taskUnits?: Partial<Record<string, number>>;
  /** What the request was charged, set by the quota stage when it settles. */
  credits?: number;
}

/**
 * What an engine yields, in order: reasoning deltas (when asked for), then content and tool-call
 * deltas, then exactly one `done`. A tool call's first delta carries its id and name; later ones
 * only add argument fragments under the same index.
 */
export type GenerationEvent =
  | { type: 'reasoning'; text: string }
  | { type: 'content'; text: string }
  | { type: 'tool_call'; index: number; id?: string; name?: string; arguments: string }
  | { type: 'done'; finishReason: FinishReason; usage: TokenUsage };

export interface Engine {
  /** Shown in logs and the startup banner. */
  readonly description: string;
  /** A short name for request logs and metrics: `local`, `upstream`. */
  readonly kind?: string;
  generate(request: GenerationRequest): AsyncIterable<GenerationEvent>;
  close?(): Promise<void>;
  /** A model that sees pictures: the message's images are given to it, not only their MoA text. */
  readonly readsImages?: boolean;
  /** Tokens in `text` by the model's own tokenizer, where the engine has one at hand. */
  countTokens?(text: string): number;
  /** Tokens this engine has generated since it started, billed or not (the local engine counts them). */
  generatedTokens?(): number;
  /** Prompt tokens the model has read since it started, those it reused from its cache not counted (the local engine counts them). */
  evaluatedPromptTokens?(): number;
}

/**
 * An engine's failure after it generated (an answer that failed its output check twice): the
 * error carries the tokens spent, so the caller pays for them as for any generation.
 */
export function spentOn<E extends Error>(err: E, usage: TokenUsage): E {
  return Object.assign(err, { spent: { ...usage } });
}

/** The tokens a failed generation had spent, when its error says. */
export function spentOf(err: unknown): TokenUsage | undefined {
  const spent = (err as { spent?: TokenUsage } | null)?.spent;
  return spent && typeof spent.completionTokens === 'number' ? spent : undefined;
}
