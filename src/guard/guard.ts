import type { GuardrailsResult } from '../contract/wire-types.ts';
import { serviceUnavailable } from '../errors/service-error.ts';
import { LineWorkerError } from '../workers/line-worker.ts';
import { type GuardCode, isTextCode, TEXT_CODES, type TextCode } from './codes.ts';
import { matchedTextCodes, type TextScores, type Thresholds } from './text/text-classifier.ts';

/** What the guard needs of a text classifier (the real one, or a scripted one in tests). */
export interface TextScorer {
  thresholds(): Promise<Thresholds>;
  score(texts: string[]): Promise<TextScores[][]>;
  close?(): Promise<void>;
}

/** A text to check, and where it came from (`messages[2]`, `output`). */
export interface Checked {
  source: string;
  text: string;
}

/**
 * Checks texts against the codes a `<guard>` directive lists and answers the verdict in the
 * contract's shape. Codes it has no classifier for (the image codes, for now) are reported as
 * unavailable in the verdict, never passed as if checked.
 */
export class Guard {
  constructor(private readonly text: TextScorer) {}

  async check(stage: GuardrailsResult['stage'], items: Checked[], codes: GuardCode[]): Promise<GuardrailsResult> {
    const textCodes = codes.filter(isTextCode);
    const present = items.filter((item) => item.text.trim() !== '');
    const best = new Map<TextCode, number>();
    if (textCodes.length > 0 && present.length > 0) {
      const [thresholds, scores] = await this.classify(present.map((item) => item.text));
      for (const spans of scores) {
        for (const [code, score] of matchedTextCodes(spans, textCodes, thresholds)) best.set(code, Math.max(best.get(code) ?? 0, score));
      }
    }
    const matched = TEXT_CODES.filter((code) => best.has(code)).map((code) => ({ code, score: best.get(code)! }));
    return {
      safe: matched.length === 0, stage, codes_checked: textCodes, codes_unavailable: codes.filter((c) => !isTextCode(c)),
      matched, checked: present.map((item) => item.source),
    };
  }

  close(): Promise<void> {
    return this.text.close?.() ?? Promise.resolve();
  }

  private async classify(texts: string[]): Promise<[Thresholds, TextScores[][]]> {
    try {
      return await Promise.all([this.text.thresholds(), this.text.score(texts)]);
    } catch (err) {
      if (!(err instanceof LineWorkerError)) throw err;
      throw serviceUnavailable(`The guard could not check this request (${err.message}). Retry later.`, 'guard_unavailable');
    }
  }
}

/** The content of a blocked answer: `unsafe` and the matched codes, sorted (`unsafe S1,S10`). */
export const unsafeAnswer = (verdict: GuardrailsResult) => `unsafe ${verdict.matched.map((m) => m.code).join(',')}`;
