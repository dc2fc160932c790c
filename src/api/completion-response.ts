import type { ChatCompletionResponse, FinishReason, ModelId, PrecontextEntry, ToolCall } from '../contract/wire-types.ts';
import type { TokenUsage } from '../engines/engine.ts';
import type { FoldedGeneration } from '../engines/fold-events.ts';

export interface CompletionMeta {
  id: string;
  created: number;
  model: ModelId;
}

export function toCompletionResponse(
  meta: CompletionMeta,
  folded: FoldedGeneration,
  withReasoning: boolean,
  precontext: PrecontextEntry[] = [],
  cached = false,
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
          ...(withReasoning ? { reasoning_content: folded.reasoning } : {}),
        },
        finish_reason: folded.finishReason,
      },
    ],
    usage: toWireUsage(folded.usage),
    ...(withReasoning ? { reasoning: folded.reasoning } : {}),
    precontext,
    vcache: cached,
  };
}

export const toWireUsage = (usage: TokenUsage) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.promptTokens + usage.completionTokens,
  ...(usage.taskUnits && Object.keys(usage.taskUnits).length > 0 ? { task_units: usage.taskUnits } : {}),
  ...(usage.credits !== undefined ? { credits: usage.credits } : {}),
});
