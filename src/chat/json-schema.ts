import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { invalidRequest } from '../http/errors.ts';

/** A JSON Schema sent by a caller, checked and compiled once per request. */
export interface CompiledSchema {
  schema: Record<string, unknown>;
  validate: ValidateFunction;
}

// Callers send schemas written for many drafts and tools; unknown keywords are annotations.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

/** 400 `invalid_json_schema` when `schema` is not a JSON Schema Ajv can compile. */
export function compileSchema(schema: Record<string, unknown>, param: string): CompiledSchema {
  try {
    if (!ajv.validateSchema(schema)) throw new Error(ajv.errorsText(ajv.errors));
    return { schema, validate: ajv.compile(schema) };
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
  if (!schema.validate(value)) return { ok: false, reason: ajv.errorsText(schema.validate.errors) };
  return { ok: true, value };
}
