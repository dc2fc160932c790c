import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

// The contract travels with the kit: ../../openapi.yaml is the repository's file here, and the
// copy packed at the root of dist/ in the package (see package.json's build).
const contract = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addKeyword('discriminator').addKeyword('example');
ajv.addSchema(contract, 'openapi.yaml');

/** Why `value` does not match the named schema of openapi.yaml ('' when it does). */
export function schemaProblem(name: string, value: unknown): string {
  const validate = ajv.getSchema(`openapi.yaml#/components/schemas/${name}`);
  if (!validate) return `no schema ${name} in openapi.yaml`;
  return validate(value) ? '' : `${name}: ${ajv.errorsText(validate.errors)}`;
}

/** The contract, for Schemathesis. */
export const contractDocument = contract;

/** Why `value` does not match a JSON Schema a check sent ('' when it does). */
export function jsonSchemaProblem(schema: object, value: unknown): string {
  const validate = ajv.compile(schema);
  return validate(value) ? '' : ajv.errorsText(validate.errors);
}
