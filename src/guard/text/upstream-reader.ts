import type { Engine } from '../../engines/engine.ts';
import { foldEvents } from '../../engines/fold-events.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { JobQueue, type QueueLimits } from '../../workers/job-queue.ts';
import { TEXT_CODES, type TextCode } from '../codes.ts';
import { TextReaderUnavailable, type TextScorer } from '../guard.ts';
import type { Requester } from '../requester.ts';
import type { TextReading } from './text-classifier.ts';

export interface UpstreamReaderOptions extends QueueLimits {
  /**
   * Longest piece of a text sent in one call (characters); a longer text is read in pieces that
   * overlap by an eighth, so that a request cut at a boundary is still whole in one of them. A
   * server may cut a long prompt silently (Ollama keeps its last `num_ctx` tokens): what it never
   * read must not pass as checked.
   */
  chunkChars: number;
  /** Calls in flight for one request's pieces. */
  concurrency: number;
}

/** The most a verdict takes: `unsafe`, a newline, and a few codes. */
const VERDICT_TOKENS = 24;

/**
 * A text reader on an OpenAI-compatible server that serves a Llama Guard 3 model (vLLM, llama.cpp
 * server, Ollama's `llama-guard3`): each text, or each piece of a long one, is sent as the user
 * turn, and the server's chat template asks the model for its verdict, `safe` or `unsafe` and the
 * codes on the next line (the service's codes are Llama Guard 3's). The verdict carries no score:
 * a code it names scores 1. Whatever else it answers, and a server that does not answer in time,
 * is no verdict (TextReaderUnavailable), so the guard fails closed. One queue, shared fairly by
 * the API keys as the local classifier's is, holds each request's texts.
 */
export class UpstreamTextReader implements TextScorer {
  private readonly queue: JobQueue;

  constructor(private readonly engine: Engine, private readonly options: UpstreamReaderOptions) {
    this.queue = new JobQueue('guard\'s upstream reader', options, () => new TextReaderUnavailable(`its reader did not answer within ${options.timeoutMs} ms`));
  }

  score(texts: string[], requester?: Requester): Promise<TextReading[]> {
    return this.queue.add(requester?.keyId, async (signal) => {
      const pieces = texts.map((text) => piecesOf(text, this.options.chunkChars));
      // The server's prompt cache, where it is kept per scope (vLLM's cache_salt), is the key's own, as the local classifier's windows are.
      const scope = requester && !requester.zdr ? requester.keyId : undefined;
      const verdicts = await inTurns(pieces.flat(), this.options.concurrency, (piece) => this.verdictOn(piece, scope, signal));
      let next = 0;
      return pieces.map((ofText) => readingOf(verdicts.slice(next, (next += ofText.length))));
    });
  }

  close(): Promise<void> {
    return this.engine.close?.() ?? Promise.resolve();
  }

  private async verdictOn(piece: string, scope: string | undefined, signal: AbortSignal): Promise<TextCode[]> {
    let answer: string;
    try {
      const events = this.engine.generate({
        messages: [{ role: 'user', content: piece }], maxTokens: VERDICT_TOKENS, temperature: 0, stop: [],
        output: { kind: 'text' }, tools: [], toolChoice: 'none', parallelToolCalls: false, stream: false, signal,
        ...(scope === undefined ? {} : { promptCacheScope: scope }),
      });
      answer = (await foldEvents(events)).content;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      // Its code only: the server's own message may name its address.
      throw new TextReaderUnavailable(`its reader's server failed${err instanceof ServiceError ? ` (${err.code})` : ''}`);
    }
    return verdictCodes(answer);
  }
}

/**
 * The codes a Llama Guard answer names: none for `safe`; for `unsafe`, the codes on the lines
 * after it. Anything else, and `unsafe` naming no code the service knows, is no verdict.
 */
export function verdictCodes(answer: string): TextCode[] {
  const [verdict, ...rest] = answer.trim().split(/\s*\n\s*/);
  if (verdict?.toLowerCase() === 'safe' && rest.length === 0) return [];
  if (verdict?.toLowerCase() !== 'unsafe') throw new TextReaderUnavailable('its reader answered something other than a verdict');
  const codes = rest.join(',').split(/[\s,]+/).map((code) => code.toUpperCase()).filter((code): code is TextCode => (TEXT_CODES as readonly string[]).includes(code));
  if (codes.length === 0) throw new TextReaderUnavailable('its reader answered unsafe without a code it knows');
  return codes;
}

/**
 * A text cut into pieces of at most `size` UTF-16 units overlapping by about an eighth of it, no
 * cut inside a surrogate pair; by index, so a text of megabytes is not copied into an array.
 */
export function piecesOf(text: string, size: number): string[] {
  if (text.length <= size) return [text];
  const inPair = (at: number) => at > 0 && at < text.length && /[\uD800-\uDBFF]/.test(text[at - 1]!) && /[\uDC00-\uDFFF]/.test(text[at]!);
  const cutAt = (at: number) => (inPair(at) ? at - 1 : at);
  const step = size - Math.floor(size / 8);
  const pieces: string[] = [];
  for (let start = 0; ; start = cutAt(start + step)) {
    const end = start + size >= text.length ? text.length : cutAt(start + size);
    pieces.push(text.slice(start, end));
    if (end === text.length) return pieces;
  }
}

/** Each piece's verdict as one span of the text, every threshold 0.5: a named code matches. */
function readingOf(verdicts: TextCode[][]): TextReading {
  const spans = verdicts.map((named) => [{
    harmful: named.length > 0 ? 1 : 0,
    codes: Object.fromEntries(TEXT_CODES.map((code) => [code, named.includes(code) ? 1 : 0])) as Record<TextCode, number>,
  }]);
  return { spans, thresholds: [{ harmful: 0.5, code: 0.5 }] };
}

/** `work` on every item, at most `limit` at a time, the results in the items' order; the first failure fails it and starts no more. */
async function inTurns<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      try {
        results[at] = await work(items[at]!);
      } catch (err) {
        next = items.length;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
