import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readDirectives, takeTags } from './directives.ts';

it('reads the first <task> and the <guard> codes from system messages only', () => {
  const directives = readDirectives([
    { role: 'system', content: 'Be brief. <task> OCR </task> then <task>translate</task>' },
    { role: 'developer', content: [{ type: 'text', text: '<guard>s1, S12_image ,ALL</guard>' }] },
    { role: 'user', content: '<task>web_search</task>' },
  ]);
  assert.deepEqual(directives, { task: 'ocr', guard: ['S1', 'S12_IMAGE', 'ALL'], instructions: 'Be brief.  then' });
});

it('finds nothing where there are no directives', () => {
  assert.deepEqual(readDirectives([{ role: 'user', content: '<task>ocr</task>' }]), { instructions: '' });
});

it('skips an opening tag whose value would hold "<", and keeps text around tags as it is', () => {
  assert.deepEqual(takeTags('a <TASK>x<b> <Task> ocr </TASK> z', 'task'), { values: ['ocr'], rest: 'a <TASK>x<b>  z' });
  assert.deepEqual(takeTags('İİ<task>ocr</task>!', 'task'), { values: ['ocr'], rest: 'İİ!' });
  assert.deepEqual(takeTags('<task>ocr', 'task'), { values: [], rest: '<task>ocr' });
});

// Hostile inputs of 100 KB: the parse must be linear. The test's timeout only detects a hang; the
// figures are in bench/hostile.bench.ts.
describe('directives on 100 KB of adversarial text', { timeout: 60_000 }, () => {
  const n = 100_000;
  const cases = {
    'spaces after <task>': `<task>${' '.repeat(n)}`,
    'tabs after <guard>': `<guard>${'\t'.repeat(n)}`,
    'opening tags only': '<task>'.repeat(n / 6),
    'opening tags and one closing tag at the end': `${'<task>'.repeat(n / 6)}</task>`,
    'spaces then a closing tag': `<task>${' '.repeat(n)}</task>`,
    'unclosed values with "<"': '<guard>a<'.repeat(n / 9),
  };
  for (const [name, text] of Object.entries(cases)) {
    it(name, () => {
      const directives = readDirectives([{ role: 'system', content: text }]);
      assert.ok(directives.instructions.length <= text.length);
    });
  }
});
