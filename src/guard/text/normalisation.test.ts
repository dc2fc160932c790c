import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { TEXT_CODES } from '../codes.ts';
import { readLabelled } from './evaluate.ts';
import { hide, seededRandom, type EvasionForm } from './evasion-forms.ts';
import { matchedTextCodes, TextClassifier } from './text-classifier.ts';

const EVAL = new URL('../dataset/eval.jsonl', import.meta.url).pathname;
const TEXTS = 8; // of each kind: a few, so the file stays fast

// Issue 23: what holds of the evasion forms today (bench/guard-evasion.bench.ts measures the rest,
// hiding in long text, which does not hold yet for every form). The worker normalises a text before judging it,
// so a request spaced out letter by letter, written with look-alike letters, zero-width
// characters and fullwidth forms, or with its words wrapped in symbols gets the verdict of its plain form: flagged when the plain form
// is, passed when the plain form is.
describe('the text guard reads a disguised text as its plain form', () => {
  const classifier = new TextClassifier({ ...loadConfig(process.env).guard, threads: 2, timeoutMs: 600_000 });
  after(() => classifier.close());

  const verdicts = async (texts: string[]) => {
    return (await classifier.score(texts)).map((reading) => matchedTextCodes(reading, TEXT_CODES).size > 0);
  };
  const rows = readLabelled(EVAL);
  // Spread over the file, so several codes and both kinds of safe text are in.
  const every = <T>(items: T[]) => items.filter((_, i) => i % Math.floor(items.length / TEXTS) === 0).slice(0, TEXTS);
  const texts = [...every(rows.filter((r) => r.codes.length > 0)), ...every(rows.filter((r) => r.codes.length === 0))].map((r) => r.text);

  // A long text is read sentence by sentence after normalising, so line breaks do not cut a
  // sentence, and a run of short sentences is read as one: a request split two words a line, or
  // cut into sentences of two or three words, between harmless sentences reads whole again (a
  // request with its own full stop; one without runs on into the next sentence).
  for (const form of ['split-lines', 'clipped'] as EvasionForm[]) {
    it(`finds a flagged request in ${form} form among harmless sentences`, async () => {
      const stopped = (text: string) => /[.?!]$/.test(text);
      const candidates = rows.filter((r) => r.codes.length > 0 && stopped(r.text)).map((r) => r.text).filter((_, i) => i % 5 === 0).slice(0, 2 * TEXTS);
      const filler = rows.filter((r) => r.codes.length === 0 && stopped(r.text)).map((r) => r.text);
      const plain = await verdicts(candidates);
      const requests = candidates.filter((_, i) => plain[i]);
      assert.ok(requests.length >= TEXTS, `${requests.length} requests flagged alone`);
      const hidden = requests.map((request, i) => hide(form, request, filler, seededRandom(100 + i), 400));
      assert.ok(hidden.every((text, i) => !text.includes(requests[i]!)), 'every request is cut');
      const seen = await verdicts(hidden);
      assert.deepEqual(requests.filter((_, i) => !seen[i]), [], 'requests that escaped once cut');
    });
  }

  // A text whose words are wrapped in code punctuation is read by its words alone (guard_worker.py,
  // words_of): before, a third of such requests passed.
  for (const form of ['spaced', 'homoglyphs', 'symbols'] as EvasionForm[]) {
    it(`gives ${form} texts the verdict of their plain form`, async () => {
      const disguised = texts.map((text, i) => hide(form, text, [], seededRandom(i), 0));
      assert.ok(disguised.every((d, i) => d !== texts[i]), 'every text is disguised');
      const [plain, seen] = [await verdicts(texts), await verdicts(disguised)];
      assert.ok(plain.some(Boolean) && !plain.every(Boolean), 'both verdicts are among the plain texts');
      const differ = texts.flatMap((t, i) => (plain[i] !== seen[i] ? [`${t} -> ${disguised[i]}`] : []));
      assert.deepEqual(differ, [], `${form}: verdicts that changed with the form`);
    });
  }
});
