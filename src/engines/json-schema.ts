import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
const AjvDraft04 = createRequire(import.meta.url)('ajv-draft-04') as typeof import('ajv-draft-04').default;
import { invalidRequest } from '../errors/service-error.ts';
import { linearRegExp } from './linear-regexp.ts';
import type { SchemaBudget } from './schema-budget.ts';

/** A JSON Schema sent by a caller, checked and compiled once per request. */
export interface CompiledSchema {
  schema: Record<string, unknown>;
  validate: ValidateFunction;
}

type AnyAjv = Pick<Ajv, 'validateSchema' | 'compile' | 'removeSchema' | 'errorsText' | 'errors'>;

// Callers send schemas written for many drafts and tools; unknown keywords are annotations. Their
// patterns run in linear time (linear-regexp.ts): a native RegExp would backtrack on the event loop.
const OPTIONS = { strict: false, allErrors: true, validateFormats: false, code: { regExp: linearRegExp } } as const;
const draft06 = createRequire(import.meta.url)('ajv/dist/refs/json-schema-draft-06.json') as object;

/**
 * A validator that holds no caller's schema for long. Each compile is followed at once by
 * clearing the instance, in the same synchronous step, so no other request can see or `$ref` the
 * schema and the same `$id` compiles in every request. Ajv still keeps the values its generated
 * code uses (enums, patterns) for the instance's life, so the instance is replaced after
 * `RECYCLE_AFTER` compiles: memory stays bounded, and the ~7 ms an instance costs to make is spread
 * thin (a fresh instance for every schema would cost it every time).
 */
class RecycledValidator {
  private ajv: AnyAjv | undefined;
  private compiles = 0;

  constructor(private readonly make: () => AnyAjv) {}

  compile(schema: Record<string, unknown>): ValidateFunction {
    const ajv = (this.ajv ??= this.make());
    try {
      if (!ajv.validateSchema(schema)) throw new Error(ajv.errorsText(ajv.errors));
      return ajv.compile(schema);
    } finally {
      ajv.removeSchema(); // every caller's schema out again (meta-schemas stay)
      if (++this.compiles % RECYCLE_AFTER === 0) this.ajv = undefined;
    }
  }
}

const RECYCLE_AFTER = 100;

// One validator per draft that real tools emit, chosen by `$schema` (zod and openai-node say
// draft-07; no `$schema` means 2020-12). Module-level, yet holding nothing between requests.
const latest = new RecycledValidator(() => new Ajv2020(OPTIONS));
const VALIDATORS: { draft: RegExp; validator: RecycledValidator }[] = [
  { draft: /json-schema\.org\/draft-04\/schema/, validator: new RecycledValidator(() => new AjvDraft04(OPTIONS)) },
  { draft: /json-schema\.org\/draft-0[67]\/schema/, validator: new RecycledValidator(() => withDraft06(new Ajv(OPTIONS))) },
  { draft: /json-schema\.org\/draft\/2019-09\/schema/, validator: new RecycledValidator(() => new Ajv2019(OPTIONS)) },
  { draft: /json-schema\.org\/draft\/2020-12\/schema/, validator: latest },
];
const errorText = new Ajv2020(OPTIONS);

function withDraft06(ajv: Ajv): Ajv {
  ajv.addMetaSchema(draft06);
  return ajv;
}

/** The validator for the schema's `$schema`, 2020-12 when it names none; 400 for one it does not know. */
function validatorFor(schema: Record<string, unknown>, param: string): RecycledValidator {
  const declared = schema.$schema;
  if (declared === undefined) return latest;
  const found = typeof declared === 'string' ? VALIDATORS.find((v) => v.draft.test(declared)) : undefined;
  if (!found) {
    throw invalidRequest(`${param}: unsupported $schema ${JSON.stringify(declared)}; supported: JSON Schema draft-04, draft-06, draft-07, 2019-09 and 2020-12.`,
      'invalid_json_schema', param);
  }
  return found.validator;
}

/**
 * 400 `invalid_json_schema` when `schema` is not a JSON Schema that can be compiled, has a pattern
 * that cannot be matched in linear time, or takes the request's `budget` past its limits.
 */
export function compileSchema(schema: Record<string, unknown>, param: string, budget?: SchemaBudget): CompiledSchema {
  budget?.charge(schema, param);
  const validator = validatorFor(schema, param);
  try {
    return { schema, validate: validator.compile(schema) };
  } catch (err) {
    throw invalidRequest(`${param} is not a valid JSON Schema: ${(err as Error).message}`, 'invalid_json_schema', param);
  }
}
/** Parses `text` as JSON and checks it; returns a reason when it does not conform. */
export function checkJson(text: string, schema: CompiledSchema): { ok: true; value: unknown } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not JSON (${(err as Error).message})` };
  }
  if (!schema.validate(value)) return { ok: false, reason: errorText.errorsText(schema.validate.errors) };
  return { ok: true, value };
}
