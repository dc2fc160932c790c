import type { FoldedGeneration } from '../../engines/fold-events.ts';
import { stableJson } from '../cache-key.ts';

/**
 * The semantic cache's judge, for deterministic requests only (temperature 0 or a seed): two
 * answers are the same when their text is equal after trimming and collapsing white space, and
 * their tool calls name the same functions with equal arguments (as JSON values). Reasoning is not
 * compared. There is no judge for sampled answers, so the semantic layer never serves them.
 */
export function sameAnswer(a: FoldedGeneration, b: FoldedGeneration): boolean {
  return normalised(a) === normalised(b);
}

function normalised(answer: FoldedGeneration): string {
  const calls = answer.toolCalls.map((call) => [call.function.name, jsonOrText(call.function.arguments)]);
  return stableJson([answer.content.trim().replace(/\s+/g, ' '), calls]);
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
