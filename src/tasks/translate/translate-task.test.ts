import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ServiceError } from '../../errors/service-error.ts';
import { taskInput } from '../../testing/task-input.ts';
import { loadConfig } from '../../config.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';
import { Apertium } from './apertium.ts';
import { LanguageDetector } from './language-detector.ts';
import { createTranslateTask, readDirections } from './translate-task.ts';

const languages = new LanguageDetector(workerLimitsOf(loadConfig({})));
after(() => languages.close());
const task = createTranslateTask(new Apertium(workerLimitsOf(loadConfig({}))), languages);
const translate = async (text: string, instructions: string) => {
  const entry = await task.run(taskInput({ text, instructions }));
  if (entry.name !== 'translate') throw new Error('not a translate entry');
  return entry.result;
};

describe('translate task (apertium)', () => {
  it('translates English to Spanish, the target named in words', async () => {
    const result = await translate('The cat is black.', 'to Spanish');
    assert.deepEqual([result.source_language, result.target_language, result.engine], ['en', 'es', 'apertium eng-spa']);
    assert.match(result.translated_text, /gato/i);
    assert.match(result.translated_text, /negro/i);
  });

  it('detects the source language and translates to English by default', async () => {
    const result = await translate('El perro come pan en la casa.', '');
    assert.equal(result.source_language, 'es');
    assert.equal(result.target_language, 'en');
    assert.match(result.translated_text, /dog/i);
  });

  it('pivots through Spanish where no direct pair exists (French to Catalan)', async () => {
    const result = await translate('Le chat est noir.', 'from French to ca');
    assert.equal(result.engine, 'apertium fr-es + spa-cat');
    assert.match(result.translated_text, /gat/i);
  });

  it('refuses a pair it cannot translate, listing the ones it can', async () => {
    await assert.rejects(translate('Hello world, how are you today?', 'to Japanese'),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && /target language/.test(e.message));
    await assert.rejects(translate('Hello world, how are you today?', 'to it'),
      (e: unknown) => e instanceof ServiceError && e.code === 'unsupported_language_pair' && /en-es/.test(e.message));
  });
});

describe('apertium under its bounds', { timeout: 120_000 }, () => {
  const limits = workerLimitsOf(loadConfig({}));
  const is = (status: number, code: string) => (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code;

  it('stops a translation past its deadline with 503 task_timeout (a test-only deadline of 1 ms)', async () => {
    await assert.rejects(new Apertium({ ...limits, timeoutMs: 1 }).translate('The cat is black. '.repeat(1000), { modes: ['eng-spa'] }), is(503, 'task_timeout'));
  });

  it('answers a mode apertium cannot run with 500 task_failed: the input it never read is no crash (EPIPE)', async () => {
    await assert.rejects(new Apertium(limits).translate('word '.repeat(2_000_000), { modes: ['xxx-yyy'] }), is(500, 'task_failed'));
  });
});

// The patterns that read the system text, on 100 KB of adversarial text (the timeout only detects a hang).
describe('readDirections on hostile text', { timeout: 60_000 }, () => {
  it('reads "from French to Spanish"', () => assert.deepEqual(readDirections('from French to Spanish'), { source: 'fr', target: 'es' }));
  for (const [name, text] of Object.entries({
    'spaces after "from" and "target"': `from${' '.repeat(50_000)}1 target${' '.repeat(50_000)}:`,
    'repeated "target:"': 'target: '.repeat(12_500),
    'repeated "to" without a word': 'to 1 '.repeat(20_000),
  })) {
    it(name, () => assert.equal(typeof readDirections(text), 'object'));
  }
});
