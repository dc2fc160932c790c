import type { ChatCompletionChunk, ChunkDelta, FinishReason } from '../api/types.ts';
import type { GenerationEvent } from '../engines/engine.ts';
import { type CompletionMeta, toWireUsage } from './fold.ts';

export interface ChunkOptions {
  includeUsage: boolean;
}

/**
 * Turns the engine's event stream into wire chunks: the streaming path. Reasoning goes first,
 * inside <think>…</think> in content deltas, as the spec asks; the first chunk carries the role.
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

  // Wait for the engine's first event before the first chunk, so that a failure before any
  // output (a full queue, an unreachable upstream) can still leave as an HTTP error.
  const iterator = events[Symbol.asyncIterator]();
  let next = await iterator.next();
  yield chunk({ role: 'assistant', content: '' });
  let thinking = false;
  const closeThinking = function* () {
    if (thinking) {
      thinking = false;
      yield chunk({ content: '</think>' });
    }
  };

  for (; !next.done; next = await iterator.next()) {
    const event = next.value;
    switch (event.type) {
      case 'reasoning':
        if (!thinking) {
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
      case 'done':
        yield* closeThinking();
        yield chunk({}, event.finishReason);
        if (options.includeUsage) {
          const { id, created, model } = meta;
          yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: toWireUsage(event.usage) };
        }
        return;
    }
  }
  throw new Error('engine stream ended without a done event');
}
