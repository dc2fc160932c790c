import type { GuardrailsResult } from '../contract/wire-types.ts';
import type { GenerationEvent } from '../engines/engine.ts';
import { EventFold, type FoldedGeneration, replayEvents, textAnswer } from '../engines/fold-events.ts';
import { type Checked, unsafeAnswer } from './guard.ts';

/** Checks output texts; `onVerdict` hears every verdict (for the precontext and the cache). */
export interface OutputCheck {
  check(items: Checked[]): Promise<GuardrailsResult>;
  onVerdict(verdict: GuardrailsResult): void;
}

const outputTexts = (folded: Pick<FoldedGeneration, 'content' | 'reasoning' | 'toolCalls'>): Checked[] => [
  { source: 'output', text: folded.reasoning },
  { source: 'output', text: folded.content },
  ...folded.toolCalls.map((call) => ({ source: 'output', text: call.function.arguments })),
];

/** Not streamed: the whole answer is checked before any of it is returned; an unsafe one is replaced. */
export async function* checkWholeAnswer(events: AsyncIterable<GenerationEvent>, output: OutputCheck): AsyncGenerator<GenerationEvent> {
  const fold = new EventFold();
  for await (const event of events) {
    const folded = fold.add(event);
    if (!folded) continue;
    const verdict = await output.check(outputTexts(folded));
    output.onVerdict(verdict);
    yield* verdict.safe ? replayEvents(folded) : textAnswer(unsafeAnswer(verdict), folded.usage);
    return;
  }
}

/** Each call's arguments, whole (they come in fragments, by index). */
function argumentsByCall(calls: Extract<GenerationEvent, { type: 'tool_call' }>[]): string[] {
  const byIndex = new Map<number, string>();
  for (const call of calls) byIndex.set(call.index, (byIndex.get(call.index) ?? '') + call.arguments);
  return [...byIndex.values()];
}

/** The end of the last whole sentence in `text` (after its punctuation), or -1. */
function lastSentenceEnd(text: string): number {
  for (let i = text.length - 2; i >= 0; i--) {
    if ('.!?\n'.includes(text[i]!) && /\s/.test(text[i + 1]!)) return i + 1;
  }
  return -1;
}

/**
 * Streamed: text is held until a sentence ends, checked, and only then released, so nothing
 * unchecked reaches the caller. Reasoning is released before the content that follows it; tool
 * calls are held to the end. When a sentence matches, it and the rest are withheld, the source is
 * stopped, and the stream ends with `unsafe CODES` (after a blank line if text was released).
 */
export async function* releaseChecked(events: AsyncIterable<GenerationEvent>, output: OutputCheck): AsyncGenerator<GenerationEvent> {
  const pending = { reasoning: '', content: '' };
  const heldCalls: Extract<GenerationEvent, { type: 'tool_call' }>[] = [];
  let released = false;
  let blocked: GuardrailsResult | undefined;
  let lastSafe: GuardrailsResult | undefined;

  /** Checks `texts`; answers whether they may be released (and remembers a block). */
  const passes = async (texts: string[]) => {
    const verdict = await output.check(texts.map((text) => ({ source: 'output', text })));
    if (verdict.safe) {
      lastSafe = verdict;
      return true;
    }
    output.onVerdict(verdict);
    blocked = verdict;
    return false;
  };
  /** Releases the whole sentences of one kind (all of it with `all`), once checked. */
  async function* flush(kind: 'reasoning' | 'content', all: boolean): AsyncGenerator<GenerationEvent> {
    const end = all ? pending[kind].length : lastSentenceEnd(pending[kind]);
    if (end <= 0) return;
    const ready = pending[kind].slice(0, end);
    if (!(await passes([ready]))) return;
    pending[kind] = pending[kind].slice(end);
    released = true;
    yield { type: kind, text: ready };
  }

  for await (const event of events) {
    if (event.type === 'reasoning') {
      pending.reasoning += event.text;
      yield* flush('reasoning', false);
    } else if (event.type === 'content') {
      yield* flush('reasoning', true); // reasoning goes before the content that follows it
      pending.content += event.text;
      if (!blocked) yield* flush('content', false);
    } else if (event.type === 'tool_call') {
      heldCalls.push(event);
    } else {
      yield* flush('reasoning', true);
      if (!blocked) yield* flush('content', true);
      if (!blocked && heldCalls.length > 0 && (await passes(argumentsByCall(heldCalls)))) yield* heldCalls;
      if (!blocked) {
        output.onVerdict(lastSafe ?? (await output.check([]))); // the whole answer passed: say so
        yield event;
        return;
      }
    }
    if (blocked) break; // leaving the loop stops the source
  }
  if (blocked) yield* textAnswer(`${released ? '\n\n' : ''}${unsafeAnswer(blocked)}`);
}
