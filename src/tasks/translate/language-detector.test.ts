import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { projectFile } from '../../project-files.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';
import { LanguageDetector } from './language-detector.ts';

describe('language detection (eld, in its worker)', { timeout: 120_000 }, () => {
  const languages = new LanguageDetector(workerLimitsOf(loadConfig({})));
  after(() => languages.close());

  it('tells Spanish, French and English apart', async () => {
    assert.equal(await languages.detect('El perro come pan en la casa.'), 'es');
    assert.equal(await languages.detect('Le chat est noir et il dort sur le lit.'), 'fr');
    assert.equal(await languages.detect('The dog eats bread in the house.'), 'en');
  });

  it('reads the start of a text of megabytes, and answers nothing for a text with no words', async () => {
    assert.equal(await languages.detect('Le chat est noir et il dort sur le lit. '.repeat(100_000)), 'fr');
    assert.equal(await languages.detect('1234 5678 !!!'), undefined);
  });

  // Its tables are 133 MB of objects: in the serving process, every full collection marked them.
  it('is loaded by no module of the serving process, only by its worker', () => {
    const sources = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []);
    const importers = sources(projectFile('src')).filter((file) => /from\s+'eld[/']|import\(\s*'eld[/']/.test(readFileSync(file, 'utf8')));
    assert.deepEqual(importers.map((file) => file.slice(projectFile('').length)), ['src/tasks/translate/language-detector.worker.ts']);
  });
});
