import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ServiceError } from '../errors/service-error.ts';
import { checkJson, compileSchema } from './json-schema.ts';

// A real collection before each heap reading, so the bound below measures what is kept.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const refused = (e: unknown) => e instanceof ServiceError && e.status === 400 && e.code === 'invalid_json_schema';

describe('compileSchema', () => {
  it('compiles the same $id in two requests, and one request cannot $ref another\'s schema', () => {
    const a = compileSchema({ $id: 'https://example.com/shape', type: 'object', required: ['a'] }, 'first');
    const b = compileSchema({ $id: 'https://example.com/shape', type: 'object', required: ['b'] }, 'second');
    assert.deepEqual([checkJson('{"a":1}', a).ok, checkJson('{"a":1}', b).ok], [true, false]);
    assert.throws(() => compileSchema({ $ref: 'https://example.com/shape' }, 'third'), refused);
  });

  for (const [draft, uri, schema, good, bad] of [
    ['draft-04', 'http://json-schema.org/draft-04/schema#', { type: 'object', properties: { n: { type: 'number', minimum: 0, exclusiveMinimum: true } } }, '{"n":1}', '{"n":0}'],
    ['draft-06', 'http://json-schema.org/draft-06/schema#', { type: 'object', properties: { n: { exclusiveMinimum: 0 } } }, '{"n":1}', '{"n":0}'],
    ['draft-07 (zod, openai-node)', 'http://json-schema.org/draft-07/schema#', { type: 'object', properties: { s: { type: 'string' } }, required: ['s'], additionalProperties: false, definitions: {} }, '{"s":"x"}', '{"s":1}'],
    ['2019-09', 'https://json-schema.org/draft/2019-09/schema', { type: 'array', items: { type: 'integer' }, maxItems: 2 }, '[1,2]', '[1,2,3]'],
    ['2020-12', 'https://json-schema.org/draft/2020-12/schema', { type: 'array', prefixItems: [{ type: 'string' }] }, '["a",1]', '[1]'],
  ] as const) {
    it(`compiles a ${draft} schema and checks answers with its rules`, () => {
      const compiled = compileSchema({ $schema: uri, ...schema } as Record<string, unknown>, 'response_format');
      assert.equal(checkJson(good, compiled).ok, true);
      assert.equal(checkJson(bad, compiled).ok, false);
    });
  }

  it('refuses a $schema it does not know, naming the supported drafts', () => {
    assert.throws(() => compileSchema({ $schema: 'https://example.com/my-meta', type: 'object' }, 'tools[0].function.parameters'),
      (e: unknown) => refused(e) && /draft-07/.test((e as Error).message));
  });

  // Every caller's schema leaves the shared validators again: 2,000 distinct schemas (each with its
  // own $id and a large enum) leave the heap where it was, within a generous bound.
  it('keeps no caller schema: heap growth over 2,000 distinct schemas stays bounded', { timeout: 120_000 }, () => {
    const big = (i: number) => ({ $id: `https://example.com/s${i}`, type: 'string', enum: Array.from({ length: 500 }, (_, j) => `value-${i}-${j}`) });
    for (let i = 0; i < 200; i++) compileSchema(big(i), 'warm-up');
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 2000; i++) compileSchema(big(i + 1000), 'p');
    gc();
    const grownMb = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
    // Kept, they would hold about 75 MB (measured with one shared instance); recycled, about 1 MB.
    assert.ok(grownMb < 20, `heap grew ${grownMb.toFixed(1)} MB`);
  });
});
