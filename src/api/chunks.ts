import type { ChatCompletionChunk, ChunkDelta, FinishReason, PrecontextEntry } from '../contract/wire-types.ts';
import type { GenerationEvent } from '../engines/engine.ts';
import { type CompletionMeta, toWireUsage } from './completion-response.ts';

export interface ChunkOptions {
  includeUsage: boolean;
  /**
   * Sent before the answer, one chunk each, as `<precontext>{…}</precontext>` (x-show-additional-info);
   * entries added to the array while the answer is made are sent before its final chunk.
   */
  precontext?: PrecontextEntry[];
  /** Reasoning in `delta.reasoning_content` instead of `<think>` tags in content (x-service-reasoning-delta). */
  reasoningDelta?: boolean;
}

/**
 * Turns the engine's event stream into wire chunks: the streaming path. Reasoning goes first,
 * inside <think>…</think> in content deltas, as the spec asks. The first chunk, carrying the role,
 * waits for the engine's first event, so that a failure before any output (a full queue, an
 * unreachable upstream) can still leave as an HTTP error.
 *
 * A plain iterator over a synchronous translation of each event, not an async generator: this
 * sits on every event of every streamed answer, where a generator's `for await` and `yield` cost
 * several promises each.
 */
export function toChunks(
  meta: CompletionMeta,
  events: AsyncIterable<GenerationEvent>,
  options: ChunkOptions,
): AsyncIterableIterator<ChatCompletionChunk> {
  const source = events[Symbol.asyncIterator]();
  const translate = chunkTranslator(meta, options);
  const ready: ChatCompletionChunk[] = [];
  let ended = false;
  const finished = { done: true, value: undefined } as const;
  const next = (): Promise<IteratorResult<ChatCompletionChunk>> => {
    if (ready.length) return Promise.resolve({ done: false, value: ready.shift()! });
    // After `done`, the engine's stream is closed (so it releases what it holds), as `for await` would.
    if (ended) return Promise.resolve(source.return?.()).then(() => finished);
    return source.next().then((result) => {
      if (result.done) throw new Error('engine stream ended without a done event');
      ended = translate(result.value, ready);
      return next();
    });
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next,
    return: async () => {
      ended = true;
      ready.length = 0;
      await source.return?.();
      return finished;
    },
  };
}

/** The chunks each event makes, in order; answers whether the event ended the answer (`done`). */
function chunkTranslator(meta: CompletionMeta, options: ChunkOptions) {
  const chunk = (delta: ChunkDelta, finishReason: FinishReason | null = null): ChatCompletionChunk => ({
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
    ...(options.includeUsage ? { usage: null } : {}),
  });
  let started = false;
  let thinking = false;
  /** Precontext entries sent so far: a stage may add one late (the guard's output verdict). */
  let shown = 0;
  // Made once per answer, not per event: a function made under tsx is also given its name, a call each.
  const precontextChunks = (out: ChatCompletionChunk[]) => {
    const entries = options.precontext ?? [];
    for (; shown < entries.length; shown++) out.push(chunk({ content: `<precontext>${JSON.stringify(entries[shown])}</precontext>` }));
  };
  const closeThinking = (out: ChatCompletionChunk[]) => {
    if (thinking) {
      thinking = false;
      out.push(chunk({ content: '</think>' }));
    }
  };
  return (event: GenerationEvent, out: ChatCompletionChunk[]): boolean => {
    if (!started) {
      started = true;
      out.push(chunk({ role: 'assistant', content: '' }));
      precontextChunks(out);
    }
    switch (event.type) {
      case 'reasoning':
        if (options.reasoningDelta) {
          if (event.text) out.push(chunk({ reasoning_content: event.text }));
        } else if (!thinking) {
          thinking = true;
          out.push(chunk({ content: '<think>' + event.text }));
        } else if (event.text) {
          out.push(chunk({ content: event.text }));
        }
        return false;
      case 'content':
        closeThinking(out);
        if (event.text) out.push(chunk({ content: event.text }));
        return false;
      case 'tool_call':
        closeThinking(out);
        out.push(chunk({
          tool_calls: [
            {
              index: event.index,
              ...(event.id !== undefined ? { id: event.id, type: 'function' as const } : {}),
              function: { ...(event.name !== undefined ? { name: event.name } : {}), arguments: event.arguments },
            },
          ],
        }));
        return false;
      case 'done': {
        closeThinking(out);
        precontextChunks(out); // entries added while the answer was made
        out.push(chunk({}, event.finishReason));
        const { id, created, model } = meta;
        if (options.includeUsage) {
          out.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: toWireUsage(event.usage) });
        }
        return true;
      }
    }
  };
}
