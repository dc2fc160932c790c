import type { FinishReason, ToolCall } from '../contract/wire-types.ts';
import type { GenerationEvent, TokenUsage } from './engine.ts';

export interface FoldedGeneration {
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: TokenUsage;
}

/** Folds the engine's event stream into the whole answer: the non-streaming path. */
export async function foldEvents(events: AsyncIterable<GenerationEvent>): Promise<FoldedGeneration> {
  let content = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  for await (const event of events) {
    switch (event.type) {
      case 'reasoning':
        reasoning += event.text;
        break;
      case 'content':
        content += event.text;
        break;
      case 'tool_call': {
        const call = (toolCalls[event.index] ??= {
          id: event.id ?? '',
          type: 'function',
          function: { name: event.name ?? '', arguments: '' },
        });
        call.function.arguments += event.arguments;
        break;
      }
      case 'done':
        return { content, reasoning, toolCalls, finishReason: event.finishReason, usage: event.usage };
    }
  }
  throw new Error('engine stream ended without a done event');
}
