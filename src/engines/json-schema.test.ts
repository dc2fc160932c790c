import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ServiceError } from '../errors/service-error.ts';
import { checkJson, compileSchema } from './json-schema.ts';
import { DEFAULT_SCHEMA_LIMITS, schemaBudget } from './schema-budget.ts';
import { moduleUrl, runInChild, TICKER } from '../testing/in-child.ts';

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

// A caller's pattern runs on the event loop that serves everyone, so it must run in linear time:
// `^(a|a)*$` against forty "a" and a "!" backtracks for hours in a backtracking engine. The check
// runs in a child process so that the hang detector (the parent's, minutes) can still end it.
describe('caller patterns', () => {
  const hostile = `${'a'.repeat(40)}!`;

  it('a backtracking pattern gets its verdict, and the event loop turns between verdicts', { timeout: 300_000 }, async () => {
    const result = await runInChild(`${TICKER}
      const { checkJson, compileSchema } = await import(${moduleUrl('./json-schema.ts', import.meta.url)});
      const schema = compileSchema({
        type: 'object',
        properties: { s: { type: 'string', pattern: '^(a|a)*$' } },
        patternProperties: { '^(b|b)*$': { type: 'integer' } },
      }, 'response_format.json_schema.schema');
      const verdicts = [];
      for (const answer of [${JSON.stringify(JSON.stringify({ s: hostile }))}, ${JSON.stringify(JSON.stringify({ [`${'b'.repeat(40)}!`]: 'x' }))}, '{"s":"aaaa"}']) {
        verdicts.push(checkJson(answer, schema).ok);
        await nextTurn();
      }
      stopTicking();
      console.log(JSON.stringify({ verdicts, ticks: ticks() }));`) as { verdicts: boolean[]; ticks: number };
    // The pattern fails the "!"; the property name matches no pattern, so any value goes.
    assert.deepEqual(result.verdicts, [false, true, true]);
    assert.ok(result.ticks >= 3, `${result.ticks} turns`);
  });

  it('checks ordinary patterns as JSON Schema means them (unanchored, Unicode)', () => {
    const compiled = compileSchema({
      type: 'object',
      properties: { phone: { type: 'string', pattern: '\\d{3}-\\d{4}' }, word: { type: 'string', pattern: '^\\p{L}+$' }, e: { type: 'string', pattern: '^caf\\u00e9$' } },
      patternProperties: { '^x-': { type: 'string' } },
    }, 'response_format');
    assert.equal(checkJson('{"phone":"call 555-1234 now","word":"Ünïcödé","e":"café","x-a":"s"}', compiled).ok, true);
    assert.equal(checkJson('{"phone":"555-12"}', compiled).ok, false);
    assert.equal(checkJson('{"word":"abc1"}', compiled).ok, false);
    assert.equal(checkJson('{"x-a":1}', compiled).ok, false);
  });

  // Backreferences and lookaround have no linear-time form: refused, never run natively.
  for (const [name, pattern] of [['a backreference', '^(a+)\\1$'], ['a lookahead', '^(?=a)a+$'], ['a lookbehind', '(?<!x)a']] as const) {
    it(`refuses ${name} with 400 invalid_json_schema naming the pattern`, () => {
      assert.throws(() => compileSchema({ type: 'string', pattern }, 'tools[0].function.parameters'),
        (e: unknown) => refused(e) && (e as ServiceError).param === 'tools[0].function.parameters' && (e as Error).message.includes(JSON.stringify(pattern)));
      assert.throws(() => compileSchema({ type: 'object', patternProperties: { [pattern]: {} } }, 'response_format'), refused);
    });
  }
});

describe('caller schema size', () => {
  const limits = { maxBytes: 1000, maxDepth: 8, maxKeywords: 50 };
  const nested = (depth: number): Record<string, unknown> => (depth === 0 ? { type: 'string' } : { type: 'array', items: nested(depth - 1) });

  it('compiles a schema within the bounds', () => {
    assert.doesNotThrow(() => compileSchema(nested(6), 'p', schemaBudget(limits)));
  });

  for (const [name, schema, bound] of [
    ['too many bytes', { type: 'string', enum: ['x'.repeat(2000)] }, /1000 bytes/],
    ['too deep', nested(20), /depth 8/],
    ['too many keywords', { type: 'object', properties: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, { type: 'string' }])) }, /50 keywords/],
  ] as const) {
    it(`refuses a schema with ${name}, 400 invalid_json_schema naming the bound`, () => {
      assert.throws(() => compileSchema(schema as Record<string, unknown>, 'response_format.json_schema.schema', schemaBudget(limits)),
        (e: unknown) => refused(e) && bound.test((e as Error).message));
    });
  }

  it('counts every schema of one request against the same budget', () => {
    const budget = schemaBudget(limits);
    const schema = { type: 'object', properties: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, { type: 'string' }])) };
    compileSchema(schema, 'tools[0].function.parameters', budget);
    compileSchema(schema, 'tools[1].function.parameters', budget);
    assert.throws(() => compileSchema(schema, 'tools[2].function.parameters', budget),
      (e: unknown) => refused(e) && (e as ServiceError).param === 'tools[2].function.parameters');
  });

  it('refuses a schema nested far deeper than the stack could walk, without a stack overflow', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 100_000; i++) deep = { items: deep };
    assert.throws(() => compileSchema(deep, 'response_format', schemaBudget(DEFAULT_SCHEMA_LIMITS)), refused);
  });
});
