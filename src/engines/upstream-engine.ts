import { randomBytes } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { FinishReason } from '../contract/wire-types.ts';
import { ThinkTagSplitter } from './think-tags.ts';
import { ServiceError, serviceUnavailable } from '../errors/service-error.ts';
import type { Engine, EngineMessage, GenerationEvent, GenerationRequest } from './engine.ts';

export interface UpstreamOptions {
  /** Base URL of any OpenAI-compatible API, ending where `/chat/completions` is appended. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Longest wait for the upstream's headers, and then between two of its events. */
  timeoutMs: number;
  /** `UPSTREAM_VISION`: the upstream reads `image_url` parts; false for a text-only model. */
  vision?: boolean;
}

/** The parts of an upstream stream chunk this engine reads; everything else is ignored. */
interface UpstreamChunk {
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { message?: string; type?: string; code?: string };
}

/**
 * Any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, a hosted API, or another
 * instance of this service). It always streams from the upstream, so one code path serves both
 * modes, and reads reasoning from `reasoning_content`, `reasoning` or leading `<think>` tags.
 */
export function createUpstreamEngine(options: UpstreamOptions): Engine {
  const url = `${options.baseUrl.replace(/\/$/, '')}/chat/completions`;
  return {
    description: `OpenAI-compatible upstream ${url} (model ${options.model})`,
    readsImages: options.vision ?? true,
    async *generate(request) {
      const idle = new IdleTimeout(options.timeoutMs);
      const signal = AbortSignal.any([request.signal, idle.signal]);
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Accept: 'text/event-stream',
            ...(options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify(upstreamBody(options.model, request)),
          signal,
        });
        if (!response.ok || !response.body) throw await upstreamFailure(response);
        idle.reset();
        const type = response.headers.get('content-type') ?? '';
        if (type.startsWith('text/event-stream')) yield* readStream(response.body, idle);
        else if (type.startsWith('application/json')) yield* readWhole(await response.text());
        else throw upstreamError(`it answered ${type || 'no content type'} instead of an event stream`);
      } catch (err) {
        if (request.signal.aborted) return; // the client left; nobody is listening
        if (err instanceof ServiceError) throw err;
        const reason = idle.signal.aborted ? `no answer within ${options.timeoutMs} ms` : (err as Error).message;
        throw serviceUnavailable(`The upstream model is unavailable (${reason}). Retry later.`, 'upstream_unavailable');
      } finally {
        idle.clear();
      }
    },
  };
}

function upstreamBody(model: string, request: GenerationRequest) {
  const { output, tools, toolChoice } = request;
  return {
    model,
    messages: request.messages.map(toWireMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    temperature: request.temperature,
    top_p: request.topP,
    ...(request.stop.length ? { stop: request.stop } : {}),
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    ...(request.reasoningEffort ? { reasoning_effort: request.reasoningEffort } : {}),
    ...(output.kind === 'json'
      ? { response_format: { type: 'json_schema', json_schema: { name: output.name, schema: output.schema.schema, strict: true } } }
      : {}),
    ...(tools.length
      ? {
          tools: tools.map((t) => ({
            type: 'function',
            function: { name: t.name, description: t.description, parameters: t.parameters.schema },
          })),
          tool_choice: typeof toolChoice === 'string' ? toolChoice : { type: 'function', function: { name: toolChoice.name } },
          parallel_tool_calls: request.parallelToolCalls,
        }
      : {}),
  };
}

function toWireMessage(m: EngineMessage) {
  const images = (m.images ?? []).map((url) => ({ type: 'image_url', image_url: { url } }));
  const text = m.toolCalls && m.content === '' ? null : m.content;
  return {
    role: m.role,
    content: images.length ? [{ type: 'text', text: m.content }, ...images] : text,
    ...(m.name ? { name: m.name } : {}),
    ...(m.toolCalls ? { tool_calls: m.toolCalls } : {}),
    ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
  };
}

/** A fault of the upstream's: its answer cannot be taken for a complete one. */
const upstreamError = (why: string) =>
  new ServiceError(500, 'internal_error', 'upstream_error', `The upstream model's answer is unusable: ${why}. It is safe to retry.`);

function parseJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw upstreamError(`${what} is not JSON (${JSON.stringify(text.slice(0, 80))})`);
  }
}

/** An upstream that answered a whole completion although asked to stream. */
async function* readWhole(text: string): AsyncGenerator<GenerationEvent> {
  const whole = parseJson<{ choices?: { message?: { content?: string | null; reasoning_content?: string | null; tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[] }; finish_reason?: string | null }[]; usage?: UpstreamChunk['usage'] }>(text, 'its answer');
  const choice = whole.choices?.[0];
  if (!choice?.message || !choice.finish_reason) throw upstreamError('its answer has no message with a finish_reason');
  const { message } = choice;
  if (message.reasoning_content) yield { type: 'reasoning', text: message.reasoning_content };
  if (message.content) yield { type: 'content', text: message.content };
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    yield { type: 'tool_call', index, id: call.id || mintToolCallId(), name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' };
  }
  yield { type: 'done', finishReason: toFinishReason(choice.finish_reason), usage: { promptTokens: whole.usage?.prompt_tokens ?? 0, completionTokens: whole.usage?.completion_tokens ?? 0 } };
}

async function* readStream(body: ReadableStream<Uint8Array>, idle: IdleTimeout): AsyncGenerator<GenerationEvent> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => queue.push(event) });
  const decoder = new TextDecoder();
  const think = new ThinkTagSplitter();
  let finishReason: FinishReason | undefined;
  let sawDone = false;
  let usage = { promptTokens: 0, completionTokens: 0 };
  const idsSent = new Set<number>();

  for await (const bytes of body) {
    idle.reset();
    parser.feed(decoder.decode(bytes, { stream: true }));
    for (const event of queue.splice(0)) {
      if (event.data === '[DONE]') {
        sawDone = true;
        continue;
      }
      const chunk = parseJson<UpstreamChunk>(event.data, 'an event of its stream');
      if (chunk.error) throw new ServiceError(500, 'internal_error', 'upstream_error', `The upstream model failed: ${chunk.error.message ?? 'unknown error'}`);
      if (chunk.usage) {
        usage = { promptTokens: chunk.usage.prompt_tokens ?? 0, completionTokens: chunk.usage.completion_tokens ?? 0 };
      }
      const choice = chunk.choices?.[0];
      const delta = choice?.delta;
      const reasoning = delta?.reasoning_content ?? delta?.reasoning;
      if (reasoning) yield { type: 'reasoning', text: reasoning };
      if (delta?.content) yield* think.push(delta.content);
      for (const call of delta?.tool_calls ?? []) {
        const index = call.index ?? 0;
        // The contract promises every call a non-empty id, and a caller needs one to answer it;
        // some upstreams send none. Only a call's first delta carries it.
        const first = !idsSent.has(index);
        idsSent.add(index);
        yield {
          type: 'tool_call',
          index,
          ...(first ? { id: call.id || mintToolCallId() } : {}),
          ...(call.function?.name ? { name: call.function.name } : {}),
          arguments: call.function?.arguments ?? '',
        };
      }
      if (choice?.finish_reason) finishReason = toFinishReason(choice.finish_reason);
    }
  }
  // Neither a finish_reason nor [DONE]: the stream was cut, and what came is not the whole answer.
  if (finishReason === undefined && !sawDone) throw upstreamError('its stream ended before it was complete');
  yield* think.flush();
  yield { type: 'done', finishReason: finishReason ?? 'stop', usage };
}

/** The local engine's form of id: `call_` and 24 hex digits. */
const mintToolCallId = () => `call_${randomBytes(12).toString('hex')}`;

function toFinishReason(value: string): FinishReason {
  if (value === 'length') return 'length';
  if (value === 'tool_calls' || value === 'function_call') return 'tool_calls';
  return 'stop';
}

/**
 * Maps the upstream's refusal: its capacity problems are ours (503), a request it rejects is the
 * caller's (400, its message kept), and anything else is a fault on our side (500).
 */
async function upstreamFailure(response: Response): Promise<ServiceError> {
  const text = await response.text().catch(() => '');
  let detail = text.slice(0, 500);
  let code: string | undefined;
  try {
    const parsed = JSON.parse(text) as UpstreamChunk;
    detail = parsed.error?.message ?? detail;
    code = parsed.error?.code ?? undefined;
  } catch {
    // not JSON: keep the text
  }
  const status = response.status;
  if (status === 429 || status === 502 || status === 503 || status === 504) {
    const retryAfter = Number(response.headers.get('retry-after')) || 1;
    return serviceUnavailable(`The upstream model is overloaded (HTTP ${status}). Retry later.`, 'upstream_unavailable', retryAfter);
  }
  if (status === 400 || status === 413 || status === 422) {
    return new ServiceError(400, 'invalid_request_error', code ?? 'upstream_rejected', `The upstream model rejected the request: ${detail}`);
  }
  return new ServiceError(500, 'internal_error', 'upstream_error', `The upstream model failed with HTTP ${status}.`);
}

/** An abort signal that fires when `reset` has not been called for `ms`. */
class IdleTimeout {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  readonly signal = this.controller.signal;

  constructor(ms: number) {
    this.timer = setTimeout(() => this.controller.abort(new Error('upstream timeout')), ms);
  }

  /** Called on every read: refreshing one timer costs far less than a new one each time. */
  reset(): void {
    this.timer.refresh();
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
