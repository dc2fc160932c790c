import { readFileSync } from 'node:fs';
import { TEXT_CODES, type TextCode } from '../codes.ts';
import { matchedTextCodes, type Reading, type TextClassifier, type Thresholds } from './text-classifier.ts';

/** A labelled text: its codes ([] when safe) and its kind (harmful, lookalike, benign; long: a harmless request with its materials, read span by span; technical: a README or code chunk the heads learn). */
export interface LabelledText {
  text: string;
  codes: TextCode[];
  kind: 'harmful' | 'lookalike' | 'benign' | 'long' | 'technical';
  /** Where an external text comes from ("npm/express", "writingbench/Law"); the team's sets name none. */
  source?: string;
}

/** A text's source without its path: "npm", "writingbench", "licence"... */
export const sourceFamily = (t: LabelledText): string => (t.source ?? '').split('/')[0] ?? '';

export const readLabelled = (path: string): LabelledText[] =>
  readFileSync(path, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as LabelledText);

export interface GuardQuality {
  examples: number;
  /** `<guard>ALL</guard>`: harmful texts blocked, and safe texts (look-alikes included) blocked. */
  overall: { recall: number; falsePositiveRate: number; precision: number; f1: number };
  /** `<guard>CODE</guard>` alone: recall on that code's texts; precision among texts it blocks. */
  perCode: Record<TextCode, { recall: number; precision: number; support: number }>;
  lookalikeFalsePositiveRate: number;
  /** Rows: the true code (or `safe`); columns: the codes matched under ALL (or `none`), counted. */
  confusion: Record<string, Record<string, number>>;
}

/** Each reading's heads' thresholds, for a bench's report. */
export const describeThresholds = (t: Record<Reading, Thresholds>) =>
  `a text of one window: harmful ${t.whole.harmful}, code ${t.whole.code}; a longer text: its heads at harmful ${t.spans.harmful}, code ${t.spans.code}, and the one-window heads agreeing`;

const ratio = (a: number, b: number) => (b === 0 ? 0 : Number((a / b).toFixed(3)));

/** Runs the classifier on a labelled set and measures it as a guard would be used. */
export async function evaluate(classifier: TextClassifier, labelled: LabelledText[]): Promise<GuardQuality> {
  const scores = await classifier.score(labelled.map((l) => l.text));
  const matched = scores.map((reading) => [...matchedTextCodes(reading, TEXT_CODES).keys()]);
  const harmful = labelled.map((l) => l.codes.length > 0);
  const blocked = matched.map((m) => m.length > 0);
  const count = (pick: (i: number) => boolean) => labelled.filter((_, i) => pick(i)).length;

  const truePositives = count((i) => harmful[i]! && blocked[i]!);
  const recall = ratio(truePositives, count((i) => harmful[i]!));
  const precision = ratio(truePositives, count((i) => blocked[i]!));
  const perCode = Object.fromEntries(TEXT_CODES.map((code) => {
    const has = (i: number) => labelled[i]!.codes.includes(code);
    const flagged = (i: number) => matched[i]!.includes(code);
    return [code, {
      recall: ratio(count((i) => has(i) && flagged(i)), count(has)),
      precision: ratio(count((i) => has(i) && flagged(i)), count(flagged)),
      support: count(has),
    }];
  })) as GuardQuality['perCode'];

  const confusion: Record<string, Record<string, number>> = {};
  labelled.forEach((l, i) => {
    const row = (confusion[l.codes[0] ?? 'safe'] ??= {});
    for (const column of matched[i]!.length ? matched[i]! : ['none']) row[column] = (row[column] ?? 0) + 1;
  });
  return {
    examples: labelled.length,
    overall: {
      recall, precision,
      falsePositiveRate: ratio(count((i) => !harmful[i]! && blocked[i]!), count((i) => !harmful[i]!)),
      f1: ratio(2 * precision * recall, precision + recall),
    },
    perCode,
    lookalikeFalsePositiveRate: ratio(count((i) => labelled[i]!.kind === 'lookalike' && blocked[i]!), count((i) => labelled[i]!.kind === 'lookalike')),
    confusion,
  };
}
