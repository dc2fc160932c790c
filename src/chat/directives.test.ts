import assert from 'node:assert/strict';
import { it } from 'node:test';
import { readDirectives } from './directives.ts';

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
