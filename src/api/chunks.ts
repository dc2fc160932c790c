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
 */
export async function* toChunks(
  meta: CompletionMeta,
  events: AsyncIterable<GenerationEvent>,
  options: ChunkOptions,
): AsyncGenerator<ChatCompletionChunk> {
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
  const precontextChunks = function* () {
    const entries = options.precontext ?? [];
    for (; shown < entries.length; shown++) yield chunk({ content: `<precontext>${JSON.stringify(entries[shown])}</precontext>` });
  };
  const closeThinking = function* () {
    if (thinking) {
      thinking = false;
      yield chunk({ content: '</think>' });
    }
  };

  // `for await` also closes the engine's stream when this one ends early, so the engine can
  // release what it holds (a queue slot, a sequence).
  for await (const event of events) {
    if (!started) {
      started = true;
      yield chunk({ role: 'assistant', content: '' });
      yield* precontextChunks();
    }
    switch (event.type) {
      case 'reasoning':
        if (options.reasoningDelta) {
          if (event.text) yield chunk({ reasoning_content: event.text });
        } else if (!thinking) {
          thinking = true;
          yield chunk({ content: '<think>' + event.text });
        } else if (event.text) {
          yield chunk({ content: event.text });
        }
        break;
      case 'content':
        yield* closeThinking();
        if (event.text) yield chunk({ content: event.text });
        break;
      case 'tool_call':
        yield* closeThinking();
        yield chunk({
          tool_calls: [
            {
              index: event.index,
              ...(event.id !== undefined ? { id: event.id, type: 'function' as const } : {}),
              function: { ...(event.name !== undefined ? { name: event.name } : {}), arguments: event.arguments },
            },
          ],
        });
        break;
      case 'done': {
        yield* closeThinking();
        yield* precontextChunks(); // entries added while the answer was made
        yield chunk({}, event.finishReason);
        const { id, created, model } = meta;
        if (options.includeUsage) {
          yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: toWireUsage(event.usage) };
        }
        return;
      }
    }
  }
  throw new Error('engine stream ended without a done event');
}
