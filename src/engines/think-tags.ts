import type { GenerationEvent } from './engine.ts';

const OPEN = '<think>';
const CLOSE = '</think>';

/**
 * Splits streamed text that may begin with `<think>…</think>` (this service's own streams, and
 * reasoning models served without a reasoning parser) into reasoning and content events. Tags may
 * be cut across deltas, so a tail that could start a tag is held back until the next delta.
 */
export class ThinkTagSplitter {
  private state: 'start' | 'thinking' | 'answer' = 'start';
  private pending = '';

  push(text: string): GenerationEvent[] {
    this.pending += text;
    const events: GenerationEvent[] = [];
    for (;;) {
      if (this.state === 'start') {
        const trimmed = this.pending.trimStart();
        if (trimmed.startsWith(OPEN)) {
          this.pending = trimmed.slice(OPEN.length);
          this.state = 'thinking';
        } else if (OPEN.startsWith(trimmed)) {
          return events; // still could be the opening tag
        } else {
          this.state = 'answer';
        }
      } else if (this.state === 'thinking') {
        const end = this.pending.indexOf(CLOSE);
        if (end >= 0) {
          if (end > 0) events.push({ type: 'reasoning', text: this.pending.slice(0, end) });
          this.pending = this.pending.slice(end + CLOSE.length);
          this.state = 'answer';
        } else {
          const keep = partialTagLength(this.pending, CLOSE);
          const out = this.pending.slice(0, this.pending.length - keep);
          if (out) events.push({ type: 'reasoning', text: out });
          this.pending = this.pending.slice(out.length);
          return events;
        }
      } else {
        if (this.pending) events.push({ type: 'content', text: this.pending });
        this.pending = '';
        return events;
      }
    }
  }

  /** What is still held back when the stream ends. */
  flush(): GenerationEvent[] {
    const rest = this.pending;
    this.pending = '';
    if (!rest) return [];
    return [{ type: this.state === 'thinking' ? 'reasoning' : 'content', text: rest }];
  }
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
function partialTagLength(text: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (tag.startsWith(text.slice(-n))) return n;
  }
  return 0;
}
