import { projectFile } from '../../project-files.ts';
import { TEXT_CODES, type TextCode } from '../codes.ts';
import type { QueueLimits } from '../../workers/job-queue.ts';
import { LineWorker } from '../../workers/line-worker.ts';

const SCRIPT = projectFile('src/guard/text/guard_worker.py');

/**
 * The scores of one span of a text (the text itself, or a sentence or run of sentences of a long
 * one): how likely it is a harmful request at all, and for each code.
 */
export interface TextScores {
  harmful: number;
  codes: Record<TextCode, number>;
}

export interface Thresholds {
  harmful: number;
  code: number;
}

/** `timeoutMs` and the queue's bounds (a caller's share: one caller's long texts do not hold everyone's up). */
export interface TextClassifierOptions extends QueueLimits {
  /** The Python of the guard's environment (`.venv-guard`). */
  python: string;
  /** The heads fitted by `guard_worker.py train` (`make setup` writes them). */
  headsPath: string;
  threads: number;
  timeoutMs: number;
}

/**
 * The text guard's classifier: an MPNet sentence encoder and one logistic-regression head per
 * code, in a Python worker (guard_worker.py) started once and fed batches of texts.
 */
export class TextClassifier {
  private readonly worker: LineWorker<{ texts: string[] }, { scores: number[][][] }>;

  constructor(options: TextClassifierOptions) {
    this.worker = new LineWorker({
      name: 'the text guard', command: options.python, args: [SCRIPT, 'serve', options.headsPath],
      env: { GUARD_THREADS: String(options.threads) }, timeoutMs: options.timeoutMs, maxQueued: options.maxQueued, perCaller: options.perCaller,
    });
  }

  async thresholds(): Promise<Thresholds> {
    return (await this.worker.hello()).thresholds as Thresholds;
  }

  /** Per text, the scores of each of its spans; `caller` (an API key id) is counted in the queue's share. */
  async score(texts: string[], caller?: string): Promise<TextScores[][]> {
    if (texts.length === 0) return [];
    const { scores } = await this.worker.request({ texts }, caller);
    return scores.map((spans) => spans.map(([harmful, ...codes]) => ({
      harmful: harmful!,
      codes: Object.fromEntries(TEXT_CODES.map((code, i) => [code, codes[i]!])) as Record<TextCode, number>,
    })));
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/**
 * The codes among `wanted` that a text matches, each with its best score: a code matches when,
 * in one and the same span, the harmful score and the code's both pass.
 */
export function matchedTextCodes(spans: TextScores[], wanted: readonly TextCode[], thresholds: Thresholds): Map<TextCode, number> {
  const matched = new Map<TextCode, number>();
  for (const span of spans) {
    if (span.harmful < thresholds.harmful) continue;
    for (const code of wanted) {
      if (span.codes[code] >= thresholds.code) matched.set(code, Math.max(matched.get(code) ?? 0, span.codes[code]));
    }
  }
  return matched;
}
