import type { ChatCompletionResponse, FinishReason, ModelId, PrecontextEntry, ToolCall } from '../api/types.ts';
import type { GenerationEvent, TokenUsage } from '../engines/engine.ts';

export interface CompletionMeta {
  id: string;
  created: number;
  model: ModelId;
}

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

export function toCompletionResponse(
  meta: CompletionMeta,
  folded: FoldedGeneration,
  withReasoning: boolean,
  precontext: PrecontextEntry[] = [],
): ChatCompletionResponse {
  const hasToolCalls = folded.toolCalls.length > 0;
  return {
    id: meta.id,
    object: 'chat.completion',
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: hasToolCalls && folded.content === '' ? null : folded.content,
          ...(hasToolCalls ? { tool_calls: folded.toolCalls } : {}),
        },
        finish_reason: folded.finishReason,
      },
    ],
    usage: toWireUsage(folded.usage),
    ...(withReasoning ? { reasoning: folded.reasoning } : {}),
    precontext,
    vcache: false,
  };
}

export const toWireUsage = (usage: TokenUsage) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
});
