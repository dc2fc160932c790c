import { RE2JS } from 're2js';

/** What Ajv calls for each `pattern` and `patternProperties` key (its `code.regExp` option). */
export interface LinearRegExp {
  test(s: string): boolean;
  toString(): string;
}

// ECMAScript flags Ajv may pass, as RE2's; `u` is RE2's own reading of a pattern already.
const FLAGS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0 };

/**
 * A caller's pattern compiled for RE2 (re2js, pure JavaScript), whose matching time is linear in
 * the input: a native RegExp backtracks, and `^(a|a)*$` against forty "a" and a "!" would hold
 * the event loop for hours. What RE2 cannot run in linear time (backreferences, lookaround,
 * repeats above 1000) throws here, at compile time, naming the pattern: the caller's schema is
 * refused rather than run by a backtracking engine.
 */
export function linearRegExp(pattern: string, flags: string): LinearRegExp {
  let bits = 0;
  for (const flag of flags) {
    const bit = FLAGS[flag];
    if (bit === undefined) throw new Error(`the pattern flag "${flag}" is not supported`);
    bits |= bit;
  }
  let compiled: RE2JS;
  try {
    // ECMAScript syntax (\u00e9, (?<name>…), [^]) into RE2's.
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), bits);
  } catch (err) {
    throw new Error(`the pattern ${JSON.stringify(pattern)} cannot be matched in linear time ` +
      `(backreferences, lookahead and lookbehind, and repeats above 1000 are not supported): ${(err as Error).message}`);
  }
  // JSON Schema patterns are not anchored: a match anywhere in the string counts.
  return { test: (s) => compiled.matcher(s).find(), toString: () => `/${pattern}/${flags}` };
}
// Ajv writes this into standalone code only, which the service never generates; it must not be "new RegExp".
linearRegExp.code = 'linearRegExp';
