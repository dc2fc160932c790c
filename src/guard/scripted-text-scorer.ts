import { TEXT_CODES, type TextCode } from './codes.ts';
import type { TextScorer } from './guard.ts';

/**
 * A scripted text scorer, for tests only: each text is one span whose codes score as `codesOf`
 * says (0.01 for the others) and whose harmful score is 0.99 when any code is named, else 0.01;
 * every threshold is 0.5. `before` runs before each answer (a test's gate).
 */
export function scriptedTextScorer(codesOf: (text: string) => Partial<Record<TextCode, number>> = () => ({}), before?: () => Promise<void>): TextScorer {
  return {
    score: async (texts) => {
      await before?.();
      return texts.map((text) => {
        const named = codesOf(text);
        const codes = Object.fromEntries(TEXT_CODES.map((code) => [code, named[code] ?? 0.01])) as Record<TextCode, number>;
        return { thresholds: [{ harmful: 0.5, code: 0.5 }], spans: [[{ harmful: Object.keys(named).length > 0 ? 0.99 : 0.01, codes }]] };
      });
    },
  };
}
