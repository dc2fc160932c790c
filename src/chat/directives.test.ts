import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../errors/service-error.ts';
import { readDirectives, takeTags } from './directives.ts';

it('reads the first <task> and the <guard> codes from system messages only', () => {
  const directives = readDirectives([
    { role: 'system', content: 'Be brief. <task> OCR </task> then <task>translate</task>' },
    { role: 'developer', content: [{ type: 'text', text: '<guard>s12_image, s 1 ,S10</guard>' }] },
    { role: 'user', content: '<task>web_search</task>' },
  ]);
  assert.deepEqual(directives, { task: 'ocr', guard: ['S1', 'S10', 'S12_IMAGE'], instructions: 'Be brief.  then' });
});

it('expands <guard>ALL</guard> to every code, text and image', () => {
  const { guard } = readDirectives([{ role: 'system', content: '<guard>all</guard>' }]);
  assert.equal(guard?.length, 17);
  assert.ok(guard?.includes('S14') && guard.includes('S15_IMAGE'));
});

it('refuses an unknown guard code, or an empty list, with a 400 naming the valid codes', () => {
  for (const codes of ['S1,S99', ' , ']) {
    assert.throws(() => readDirectives([{ role: 'system', content: `<guard>${codes}</guard>` }]),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && e.code === 'invalid_guard_code' && /S15_IMAGE, ALL/.test(e.message));
  }
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
