import type { ChatHistoryItem } from 'node-llama-cpp';
import type { EngineMessage, EngineTool } from '../engine.ts';

/**
 * The conversation in node-llama-cpp's terms. Tool calls and results have no place in a small
 * model's chat template, so they are written out as text the model can read.
 */
export function toChatHistory(messages: EngineMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      history.push({ type: 'system', text: m.content });
    } else if (m.role === 'user') {
      history.push({ type: 'user', text: m.content });
    } else if (m.role === 'assistant') {
      const calls = (m.toolCalls ?? []).map((c) => `I called ${c.function.name} with ${c.function.arguments}.`);
      history.push({ type: 'model', response: [[m.content, ...calls].filter(Boolean).join('\n')] });
    } else {
      history.push({ type: 'user', text: `Result of the tool call ${m.toolCallId}: ${m.content}` });
    }
  }
  return mergeAdjacent(history);
}

/** Adds an instruction to the last user turn, where a small model heeds it most. */
export function withInstruction(history: ChatHistoryItem[], instruction: string): ChatHistoryItem[] {
  const last = history.at(-1);
  if (last?.type === 'user') return [...history.slice(0, -1), { type: 'user', text: `${last.text}\n\n${instruction}` }];
  return [...history, { type: 'user', text: instruction }];
}

export function describeTools(tools: EngineTool[]): string {
  return tools
    .map((t) => `- ${t.name}${t.description ? `: ${t.description}` : ''} (arguments: ${JSON.stringify(t.parameters.schema)})`)
    .join('\n');
}

/** Templates expect turns to alternate; consecutive user turns (a tool result after a question) are joined. */
function mergeAdjacent(history: ChatHistoryItem[]): ChatHistoryItem[] {
  const merged: ChatHistoryItem[] = [];
  for (const item of history) {
    const last = merged.at(-1);
    if (last?.type === 'user' && item.type === 'user') {
      merged[merged.length - 1] = { type: 'user', text: `${last.text}\n\n${item.text}` };
    } else {
      merged.push(item);
    }
  }
  return merged;
}
