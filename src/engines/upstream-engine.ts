import { createHash, randomBytes } from 'node:crypto';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Agent, errors, request as send } from 'undici';
import type { FinishReason } from '../contract/wire-types.ts';
import { ThinkTagSplitter } from './think-tags.ts';
import { ServiceError, serviceUnavailable, upstreamError } from '../errors/service-error.ts';
import type { Engine, EngineMessage, GenerationEvent, GenerationRequest } from './engine.ts';
import { argumentsOf, countOf, errorFieldsOf, textOf, toolIndexOf, upstreamRejection, upstreamStreamFailure } from './upstream-fields.ts';

export interface UpstreamOptions {
  /** Base URL of any OpenAI-compatible API, ending where `/chat/completions` is appended. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Longest wait for a stream's headers, and then between two of its reads. */
  timeoutMs: number;
  /** Longest wait for a whole (not streamed) answer; defaults to `timeoutMs`. */
  answerTimeoutMs?: number;
  /** `UPSTREAM_VISION`: the upstream reads `image_url` parts; false for a text-only model. */
  vision?: boolean;
  /**
   * `UPSTREAM_CACHE_SALT`: each request carries vLLM's `cache_salt`, a hash of its prompt cache scope
   * (its API key), or a salt of its own where it has none, so that the upstream's prefix cache is
   * shared by no two keys (GenerationRequest.promptCacheScope). Off by default: OpenAI's API refuses
   * fields it does not know.
   */
  cacheSalt?: boolean;
}

/**
 * The parts of an upstream's chunk or answer this engine reads; everything else is ignored. Every
 * leaf is `unknown`: it is JSON the upstream chose, read only through upstream-fields.ts.
 */
interface UpstreamMessage {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: unknown;
}
interface UpstreamToolCall {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown } | null;
}
interface UpstreamChunk {
  choices?: { delta?: UpstreamMessage | null; message?: UpstreamMessage | null; finish_reason?: unknown }[] | null;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
}

type ResponseBody = Awaited<ReturnType<typeof send>>['body'];

/**
 * Any OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, a hosted API, or another
 * instance of this service). A streamed request is streamed from the upstream; otherwise one JSON
 * answer is asked for, and read as the same events. Reasoning is read from `reasoning_content`,
 * `reasoning` or leading `<think>` tags. Calls go through one keep-alive pool (undici's request
 * API: no web streams, and its own header and idle timeouts instead of a timer per request).
 */
export function createUpstreamEngine(options: UpstreamOptions): Engine {
  const url = `${options.baseUrl.replace(/\/$/, '')}/chat/completions`;
  const pool = new Agent({ keepAliveTimeout: 10_000 });
  const headers = {
    'content-type': 'application/json',
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
  };
  const answerTimeoutMs = options.answerTimeoutMs ?? options.timeoutMs;
  return {
    description: `OpenAI-compatible upstream ${url} (model ${options.model})`,
    kind: 'upstream',
    readsImages: options.vision ?? true,
    close: () => pool.close(),
    generate: (request) => upstreamEvents(request),
  };

  /**
   * The answer's events: a plain iterator handing out the events each read completes, not an
   * async generator yielding them one at a time (several promises each, under every event of every
   * streamed answer). Closed early (the client left, a fault), it drops the connection rather than
   * read the rest; a failure after the client left ends it quietly, since nobody is listening.
   */
  function upstreamEvents(request: GenerationRequest): AsyncIterableIterator<GenerationEvent> {
    // A whole answer's headers come when it is done; a stream's, at once.
    const headersTimeout = request.stream ? options.timeoutMs : answerTimeoutMs;
    const ready: GenerationEvent[] = [];
    let body: ResponseBody | undefined;
    /** The stream's reads and their reader; absent for a whole answer. */
    let reads: AsyncIterator<string> | undefined;
    let reader: StreamReader | undefined;
    /** Everything was read: the answer is whole in `ready`. */
    let read = false;
    let closed = false;
    const finished = { done: true, value: undefined } as const;
    const close = () => {
      closed = true;
      if (body && !body.readableEnded) body.on('error', () => {}).destroy();
    };

    /** Asks, or reads on, until there is an event to pass on or nothing more to read. */
    const fill = async (): Promise<void> => {
      if (!body) {
        const response = await send(url, {
          method: 'POST',
          dispatcher: pool,
          headers: { ...headers, accept: request.stream ? 'text/event-stream' : 'application/json' },
          body: JSON.stringify({ ...upstreamBody(options.model, request), ...(options.cacheSalt ? { cache_salt: saltOf(request.promptCacheScope) } : {}) }),
          signal: request.signal,
          headersTimeout,
          bodyTimeout: options.timeoutMs,
        });
        body = response.body;
        if (response.statusCode < 200 || response.statusCode > 299) {
          throw upstreamFailure(response.statusCode, response.headers['retry-after'], await body.text().catch(() => ''));
        }
        const type = String(response.headers['content-type'] ?? '');
        if (type.startsWith('text/event-stream')) {
          reader = new StreamReader();
          body.setEncoding('utf8');
          reads = (body as AsyncIterable<string>)[Symbol.asyncIterator]();
        } else if (type.startsWith('application/json')) {
          ready.push(...wholeAnswer(await body.text()));
          read = true;
          return;
        } else {
          throw unusableAnswer(`it answered ${type || 'no content type'} instead of an event stream`);
        }
      }
      while (ready.length === 0 && !read) {
        reader!.failure(); // an unusable event, once the events before it have been passed on
        const next = await reads!.next();
        if (next.done) {
          ready.push(...reader!.end());
          read = true;
        } else {
          ready.push(...reader!.push(next.value));
        }
      }
    };
    const passed = (): IteratorResult<GenerationEvent> => {
      if (ready.length) return { done: false, value: ready.shift()! };
      close();
      return finished;
    };
    const failed = (err: unknown): IteratorResult<GenerationEvent> => {
      close();
      ready.length = 0;
      if (request.signal.aborted) return finished; // the client left; nobody is listening
      if (err instanceof ServiceError) throw err;
      throw serviceUnavailable(`The upstream model is unavailable (${reasonOf(err, headersTimeout, options.timeoutMs)}). Retry later.`, 'upstream_unavailable');
    };
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      next() {
        if (ready.length || closed || read) return Promise.resolve(passed());
        return fill().then(passed, failed);
      },
      return() {
        ready.length = 0;
        close();
        return Promise.resolve(finished);
      },
    };
  }
}

function reasonOf(err: unknown, headersTimeoutMs: number, bodyTimeoutMs: number): string {
  if (err instanceof errors.HeadersTimeoutError) return `no answer within ${headersTimeoutMs} ms`;
  if (err instanceof errors.BodyTimeoutError) return `nothing more within ${bodyTimeoutMs} ms`;
  return (err as Error).message;
}

/** A scope's salt (the key id hashed: the upstream need not learn it), or a new one for a request without a scope. */
const saltOf = (scope: string | undefined) =>
  scope === undefined ? randomBytes(16).toString('hex') : createHash('sha256').update(`prompt cache of ${scope}`).digest('hex').slice(0, 32);

function upstreamBody(model: string, request: GenerationRequest) {
  const { output, tools, toolChoice } = request;
  return {
    model,
    messages: request.messages.map(toWireMessage),
    stream: request.stream,
    ...(request.stream ? { stream_options: { include_usage: true } } : {}),
    ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.topP !== undefined ? { top_p: request.topP } : {}),
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
const unusableAnswer = (why: string) => upstreamError(`The upstream model's answer is unusable: ${why}. It is safe to retry.`);

function parseJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw unusableAnswer(`${what} is not JSON (${JSON.stringify(text.slice(0, 80))})`);
  }
}

/** The first choice of a chunk or answer, when `choices` is a list of objects. */
function firstChoice(parsed: UpstreamChunk) {
  const choice = Array.isArray(parsed.choices) ? parsed.choices[0] : undefined;
  return choice !== null && typeof choice === 'object' ? choice : undefined;
}

const reasoningOf = (m: UpstreamMessage | null | undefined) => textOf(m?.reasoning_content) ?? textOf(m?.reasoning);

/** A message's tool calls: those that are objects; an index out of range makes the answer unusable. */
function toolCallsOf(m: UpstreamMessage | null | undefined): { index: number; call: UpstreamToolCall }[] {
  if (!Array.isArray(m?.tool_calls)) return [];
  return m.tool_calls.flatMap((call: unknown, position: number) => {
    if (call === null || typeof call !== 'object') return [];
    const c = call as UpstreamToolCall;
    const index = toolIndexOf(c.index ?? position);
    if (index === undefined) throw unusableAnswer(`a tool call's index (${JSON.stringify(c.index)}) is not a small whole number`);
    return [{ index, call: c }];
  });
}

/** A whole completion: asked for, or sent by an upstream that does not stream. */
function wholeAnswer(text: string): GenerationEvent[] {
  const whole = parseJson<UpstreamChunk>(text, 'its answer');
  const choice = firstChoice(whole);
  const message = choice?.message;
  const finishReason = textOf(choice?.finish_reason);
  if (!message || typeof message !== 'object' || !finishReason) throw unusableAnswer('its answer has no message with a finish_reason');
  const events: GenerationEvent[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning) events.push({ type: 'reasoning', text: reasoning });
  const content = textOf(message.content);
  if (content) {
    const think = new ThinkTagSplitter();
    events.push(...think.push(content), ...think.flush());
  }
  for (const { index, call } of toolCallsOf(message)) {
    events.push({ type: 'tool_call', index, id: textOf(call.id) || mintToolCallId(), name: textOf(call.function?.name) ?? '', arguments: argumentsOf(call.function?.arguments) });
  }
  events.push({ type: 'done', finishReason: toFinishReason(finishReason), usage: usageOf(whole.usage) });
  return events;
}

const usageOf = (usage: UpstreamChunk['usage']) => ({ promptTokens: countOf(usage?.prompt_tokens), completionTokens: countOf(usage?.completion_tokens) });

/**
 * An event stream's text, read as it comes: each read gives the events it completes. Synchronous,
 * so the engine hands them out itself: a generator of its own, delegated to with `yield*`, cost
 * several promises more on every event.
 */
class StreamReader {
  private readonly parsed: EventSourceMessage[] = [];
  private readonly parser = createParser({ onEvent: (event) => this.parsed.push(event) });
  private readonly think = new ThinkTagSplitter();
  private finishReason: FinishReason | undefined;
  private sawDone = false;
  private usage = { promptTokens: 0, completionTokens: 0 };
  private readonly idsSent = new Set<number>();

  /** An unusable event, thrown by `failure()` once the events before it have been passed on. */
  private failed: unknown;

  /**
   * The events completed by this piece of the stream, up to the first unusable one (then
   * `failure()` throws): what came before a fault is passed on as it would be a read earlier.
   */
  push(text: string): GenerationEvent[] {
    const events: GenerationEvent[] = [];
    try {
      this.parser.feed(text);
      this.read(events);
    } catch (err) {
      this.failed ??= err;
    }
    return events;
  }

  failure(): void {
    if (this.failed !== undefined) throw this.failed;
  }

  private read(events: GenerationEvent[]): void {
    for (const event of this.parsed.splice(0)) {
      if (event.data === '[DONE]') {
        this.sawDone = true;
        continue;
      }
      const chunk = parseJson<UpstreamChunk | null>(event.data, 'an event of its stream');
      if (chunk === null || typeof chunk !== 'object') throw unusableAnswer('an event of its stream is not an object');
      const failure = errorFieldsOf(chunk);
      if (failure) throw upstreamStreamFailure(failure);
      if (chunk.usage && typeof chunk.usage === 'object') this.usage = usageOf(chunk.usage);
      const choice = firstChoice(chunk);
      const delta = choice?.delta && typeof choice.delta === 'object' ? choice.delta : undefined;
      const reasoning = reasoningOf(delta);
      if (reasoning) events.push({ type: 'reasoning', text: reasoning });
      const content = textOf(delta?.content);
      if (content) events.push(...this.think.push(content));
      for (const { index, call } of toolCallsOf(delta)) {
        // The contract promises every call a non-empty id, and a caller needs one to answer it;
        // some upstreams send none. Only a call's first delta carries it.
        const first = !this.idsSent.has(index);
        this.idsSent.add(index);
        events.push({
          type: 'tool_call',
          index,
          ...(first ? { id: textOf(call.id) || mintToolCallId() } : {}),
          ...(textOf(call.function?.name) ? { name: textOf(call.function?.name) } : {}),
          arguments: argumentsOf(call.function?.arguments),
        });
      }
      const finish = textOf(choice?.finish_reason);
      if (finish) this.finishReason = toFinishReason(finish);
    }
  }

  /** The last events, once the stream has ended. */
  end(): GenerationEvent[] {
    // Neither a finish_reason nor [DONE]: the stream was cut, and what came is not the whole answer.
    if (this.finishReason === undefined && !this.sawDone) throw unusableAnswer('its stream ended before it was complete');
    return [...this.think.flush(), { type: 'done', finishReason: this.finishReason ?? 'stop', usage: this.usage }];
  }
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
 * caller's (400, its message quoted; see upstreamRejection), and anything else is a fault on our
 * side (500). Nothing of the upstream's own code or type reaches the caller.
 */
function upstreamFailure(status: number, retryAfterHeader: string | string[] | undefined, text: string): ServiceError {
  if (status === 429 || status === 502 || status === 503 || status === 504) {
    // A whole number of seconds within a day; anything else (a date, garbage) is 1.
    const seconds = Number(retryAfterHeader);
    const retryAfter = Number.isInteger(seconds) && seconds >= 1 && seconds <= 86_400 ? seconds : 1;
    return serviceUnavailable(`The upstream model is overloaded (HTTP ${status}). Retry later.`, 'upstream_unavailable', retryAfter);
  }
  if (status === 400 || status === 413 || status === 422) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: its text is quoted
    }
    return upstreamRejection(errorFieldsOf(parsed), text);
  }
  return upstreamError(`The upstream model failed with HTTP ${status}.`);
}
