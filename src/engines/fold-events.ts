import type { FinishReason, ToolCall } from '../contract/wire-types.ts';
import type { GenerationEvent, TokenUsage } from './engine.ts';

export interface FoldedGeneration {
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: TokenUsage;
}

/** Folds events one at a time, for a stage that watches a stream pass; `add` answers the whole at `done`. */
export class EventFold {
  private content = '';
  private reasoning = '';
  private readonly toolCalls: ToolCall[] = [];

  add(event: GenerationEvent): FoldedGeneration | undefined {
    switch (event.type) {
      case 'reasoning':
        this.reasoning += event.text;
        return undefined;
      case 'content':
        this.content += event.text;
        return undefined;
      case 'tool_call': {
        const call = (this.toolCalls[event.index] ??= {
          id: event.id ?? '',
          type: 'function',
          function: { name: event.name ?? '', arguments: '' },
        });
        call.function.arguments += event.arguments;
        return undefined;
      }
      case 'done': {
        const { content, reasoning, toolCalls } = this;
        return { content, reasoning, toolCalls, finishReason: event.finishReason, usage: event.usage };
      }
    }
  }
}

/** Folds the engine's event stream into the whole answer: the non-streaming path. */
export async function foldEvents(events: AsyncIterable<GenerationEvent>): Promise<FoldedGeneration> {
  const fold = new EventFold();
  for await (const event of events) {
    const whole = fold.add(event);
    if (whole) return whole;
  }
  throw new Error('engine stream ended without a done event');
}

/** An answer that is one text, made without generating (a task's result, a blocked answer). */
export async function* textAnswer(text: string, usage: TokenUsage = { promptTokens: 0, completionTokens: 0 }): AsyncGenerator<GenerationEvent> {
  yield { type: 'content', text };
  yield { type: 'done', finishReason: 'stop', usage };
}

/** The events that make `folded` again, for an answer that was collected (checked, or cached). */
export async function* replayEvents(folded: FoldedGeneration): AsyncGenerator<GenerationEvent> {
  if (folded.reasoning) yield { type: 'reasoning', text: folded.reasoning };
  if (folded.content) yield { type: 'content', text: folded.content };
  for (const [index, call] of folded.toolCalls.entries()) {
    yield { type: 'tool_call', index, id: call.id, name: call.function.name, arguments: '' };
    yield { type: 'tool_call', index, arguments: call.function.arguments };
  }
  yield { type: 'done', finishReason: folded.finishReason, usage: folded.usage };
}
