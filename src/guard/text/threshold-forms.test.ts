import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { readLabelled, type LabelledText } from './evaluate.ts';
import { inThresholdPart, thresholdForms } from './threshold-forms.ts';

const HERE = new URL('.', import.meta.url).pathname;
const TRAIN = new URL('../dataset/train.jsonl', import.meta.url).pathname;

describe("the evasion forms of the guard's threshold part", () => {
  // The forms are judged where the thresholds are chosen only while they hold no text the encoder
  // was tuned on: the part must be the one tuning_data.py keeps out of the tuning.
  it('takes the same threshold part as the fine-tuning keeps out', () => {
    const texts = readLabelled(TRAIN).map((r) => r.text);
    const python = execFileSync(loadConfig({}).guard.python, ['-c', `
import json, sys
from tuning_data import in_threshold_part
print(json.dumps([in_threshold_part(t) for t in json.load(sys.stdin)]))`], { cwd: HERE, input: JSON.stringify(texts), maxBuffer: 1 << 24 });
    const expected = JSON.parse(python.toString()) as boolean[];
    assert.ok(expected.filter(Boolean).length > 100);
    assert.deepEqual(texts.map(inThresholdPart), expected);
  });

  // A form's text is caught when any one of its spans is, as when serving.
  it('counts a text caught by the fit when any one of its spans is flagged', () => {
    const out = execFileSync(loadConfig({}).guard.python, ['-c', `
import json
import numpy as np
from guard_worker import forms_flagged
flagged, passed = [0.99] + [0.9] * 14, [0.1] * 15
rows = [{"form": "run-on", "kind": "form"}] * 3 + [{"form": "run-on", "kind": "form-control"}] * 2
held = np.array([passed, flagged, passed, passed, passed])
print(json.dumps(forms_flagged(held, rows, np.array([0, 0, 1, 2, 2]), {"harmful": 0.5, "code": 0.5})))`], { cwd: HERE });
    assert.deepEqual(JSON.parse(out.toString()), { 'run-on': 0.5, 'run-on control': 0 });
  });

  it('hides only requests and filler of the threshold part, and leaves the request out of each control', () => {
    const rows: LabelledText[] = [
      ...Array.from({ length: 300 }, (_, i) => ({ text: `plain${i} words here.`, codes: [], kind: 'benign' as const })),
      ...Array.from({ length: 100 }, (_, i) => ({ text: `request${i} harm now.`, codes: ['S1' as const], kind: 'harmful' as const })),
    ];
    const part = new Set(rows.filter((r) => inThresholdPart(r.text)).map((r) => r.text.split(' ')[0]));
    const forms = thresholdForms(rows, 10, 60);
    assert.equal(forms.length, 6 * 10 * 2);
    for (const row of forms.filter((r) => r.form !== 'spaced' && r.form !== 'homoglyphs')) {
      const markers = row.text.match(/(plain|request)\d+/g) ?? [];
      assert.ok(markers.every((m) => part.has(m)), `${row.form}: ${row.text}`);
      assert.equal(markers.some((m) => m.startsWith('request')), row.kind === 'form', `${row.kind} ${row.form}: ${row.text}`);
    }
    assert.ok(forms.every((r) => (r.kind === 'form') === (r.codes.length > 0)));
  });
});
