import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stableJson } from './stable-json.ts';

/** The definition the cache keys were first made with: JSON.stringify rebuilding each object from its sorted entries. */
const reference = (value: unknown) => JSON.stringify(value, (_key, v: unknown) =>
  v !== null && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : v);

describe('stableJson', () => {
  const cases: unknown[] = [
    { model: 'service', messages: [{ role: 'user', content: 'hé "quoted" \n \u2028 😀' }], temperature: 0.7, seed: null },
    { b: 1, a: { d: [3, { z: 1, y: undefined, x: () => 1 }], c: -0 }, e: NaN, f: Infinity, g: true, h: false },
    { 10: 'ten', 9: 'nine', a: 1, '01': 'not an index', '-1': 'nor this', 4294967295: 'nor this', 4294967294: 'index', ' ': 'space', '!': 1 },
    [undefined, () => 1, Symbol('s'), null, 1e21, 1e-7, 'x'],
    { when: new Date(0), bytes: Buffer.from('ab'), nested: { toJSON: (key: string) => `key was ${key}` } },
    { Z: 1, a: 2, 'é': 3, 'e': 4, '': 5 },
    'a string', 12.5, null, [], {},
  ];

  it('writes the same text, byte for byte, as the definition the stored cache keys were made with', () => {
    for (const value of cases) assert.equal(stableJson(value), reference(value), reference(value));
  });

  it('gives equal text for objects equal but for the order of their keys', () => {
    assert.equal(stableJson({ a: 1, b: { c: 2, d: 3 } }), stableJson({ b: { d: 3, c: 2 }, a: 1 }));
  });
});
