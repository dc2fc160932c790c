import { projectFile } from '../../project-files.ts';
import { TEXT_CODES, type TextCode } from '../codes.ts';
import type { Requester } from '../requester.ts';
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

/**
 * How a text was read (guard_worker.py READINGS): `whole`, a text of one window, nearly every
 * request; or `spans`, a longer text read span by span. Each has its own heads and thresholds.
 */
export type Reading = 'whole' | 'spans';

/**
 * A text's spans, each scored by every set of heads that judges the text (guard_worker.py JUDGES:
 * a text of one window by its heads, a longer text's span by its own and the one-window heads),
 * and those sets' thresholds, in the same order: a span matches only when all of them agree.
 */
export interface TextReading {
  spans: TextScores[][];
  thresholds: Thresholds[];
}

/** `timeoutMs` and the queue's bounds (a caller's share: one caller's long texts do not hold everyone's up). */
export interface TextClassifierOptions extends QueueLimits {
  /** The Python of the guard's environment (`.venv-guard`). */
  python: string;
  /** The heads fitted by `guard_worker.py train` (`make setup` writes them): a text of one window's, and a longer text's. */
  headsPath: string;
  spansHeadsPath: string;
  /** Windows whose scores the worker keeps, per API key (span_cache.py); 0: none. */
  spanCache: number;
  threads: number;
  timeoutMs: number;
}

/**
 * The text guard's classifier: an MPNet sentence encoder (its top layers fine-tuned at setup) and
 * a small network with a head per code (heads.py), in a Python worker (guard_worker.py) started
 * once and fed batches of texts.
 */
export class TextClassifier {
  private readonly worker: LineWorker<{ texts: string[]; scope?: string }, { scores: number[][][][]; judges: Reading[][]; read: number }>;
  /** Windows the encoder read, and windows answered without a reading of their own (read before for the key, or repeated in one request). */
  readonly windows = { read: 0, reused: 0 };

  constructor(options: TextClassifierOptions) {
    this.worker = new LineWorker({
      name: 'the text guard', command: options.python, args: [SCRIPT, 'serve', options.headsPath, options.spansHeadsPath],
      env: { GUARD_THREADS: String(options.threads), GUARD_SPAN_CACHE: String(options.spanCache) }, timeoutMs: options.timeoutMs, maxQueued: options.maxQueued, perCaller: options.perCaller,
    });
  }

  async warm(): Promise<void> {
    await this.worker.hello();
  }

  /** Each reading's heads' thresholds (starting the worker, and loading its models, if needed). */
  async thresholds(): Promise<Record<Reading, Thresholds>> {
    return (await this.worker.hello()).thresholds as Record<Reading, Thresholds>;
  }

  /**
   * Per text, the scores of each of its spans and the thresholds they are held to. A window already read for the same key is not read
   * again (a conversation resends its earlier turns); without a requester, or for a
   * zero-data-retention one, nothing is looked up or kept.
   */
  async score(texts: string[], requester?: Requester): Promise<TextReading[]> {
    if (texts.length === 0) return [];
    const scope = requester && !requester.zdr ? requester.keyId : undefined;
    const [thresholds, { scores, judges, read }] = await Promise.all([
      this.thresholds(), this.worker.request({ texts, ...(scope === undefined ? {} : { scope }) }, requester?.keyId)]);
    this.windows.read += read;
    this.windows.reused += scores.reduce((sum, spans) => sum + spans.length, 0) - read;
    return scores.map((spans, i) => ({
      thresholds: judges[i]!.map((reading) => thresholds[reading]),
      spans: spans.map((judged) => judged.map(([harmful, ...codes]) => ({
        harmful: harmful!,
        codes: Object.fromEntries(TEXT_CODES.map((code, j) => [code, codes[j]!])) as Record<TextCode, number>,
      }))),
    }));
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/**
 * The codes among `wanted` that a text matches, each with its best score (by the text's own
 * heads, the first judge): a code matches when, in one and the same span, every judge's harmful
 * score and code score pass that judge's thresholds.
 */
export function matchedTextCodes({ spans, thresholds }: TextReading, wanted: readonly TextCode[]): Map<TextCode, number> {
  const matched = new Map<TextCode, number>();
  const passes = (scores: TextScores, code: TextCode, { harmful, code: least }: Thresholds) => scores.harmful >= harmful && scores.codes[code] >= least;
  for (const judged of spans) {
    for (const code of wanted) {
      if (judged.every((scores, j) => passes(scores, code, thresholds[j]!))) matched.set(code, Math.max(matched.get(code) ?? 0, judged[0]!.codes[code]));
    }
  }
  return matched;
}
