/**
 * The evasion forms (evasion-forms.ts) built from the threshold part of the guard's training sets,
 * for the heads' fit to judge (guard_worker.py train --forms): how much of each form the chosen
 * thresholds catch, on requests and filler the encoder was never tuned on and the heads never fitted,
 * so the choice's price in disguised requests shows without reading a held-out set. The threshold
 * part is a fifth of the texts fixed by the SHA-256 of each (tuning_data.py, in_threshold_part).
 */
import { createHash } from 'node:crypto';
import { EVASION_FORMS, hiddenCase, type EvasionForm } from './evasion-forms.ts';
import type { LabelledText } from './evaluate.ts';

const THRESHOLD_SHARE = 20; // percent, as tuning_data.py THRESHOLD_SHARE

export const inThresholdPart = (text: string): boolean =>
  Math.floor((createHash('sha256').update(text).digest()[0]! * 100) / 256) >= 100 - THRESHOLD_SHARE;

export interface FormRow {
  text: string;
  codes: string[];
  /** "form": a request hidden by `form`; "form-control": the same text without it. */
  kind: 'form' | 'form-control';
  form: EvasionForm;
}

/** Per form, `cases` requests of the threshold part hidden in its harmless short texts (up to `maxWords` words), and their controls. */
export function thresholdForms(rows: readonly LabelledText[], cases: number, maxWords: number): FormRow[] {
  const part = rows.filter((r) => inThresholdPart(r.text));
  const requests = part.filter((r) => r.kind === 'harmful');
  const filler = part.filter((r) => r.kind === 'benign' || r.kind === 'lookalike').map((r) => r.text);
  if (requests.length === 0 || filler.length === 0) return [];
  const texts = requests.map((r) => r.text);
  return EVASION_FORMS.flatMap((form, f) => Array.from({ length: cases }, (_, i) => {
    const { index, text, control } = hiddenCase(form, texts, filler, 51_000 + f * 1_000 + i, maxWords);
    return [
      { text, codes: requests[index]!.codes, kind: 'form', form },
      { text: control, codes: [], kind: 'form-control', form },
    ] satisfies FormRow[];
  }).flat());
}
