// Validates values against the schemas of openapi.yaml, so conformance is judged by the contract
// itself rather than by assertions written again by hand.
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { loadContract } from '../src/contract/openapi-document.ts';

type SchemaName =
  | 'ChatCompletionResponse'
  | 'ChatCompletionChunk'
  | 'ErrorEnvelope'
  | 'PrecontextEntry';

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addKeyword('discriminator').addKeyword('example');
ajv.addSchema(loadContract(), 'openapi.yaml');

/** Throws with every violation listed when `value` does not match the named schema. */
export function assertMatchesSchema(name: SchemaName, value: unknown): void {
  const validate = ajv.getSchema(`openapi.yaml#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name} in openapi.yaml`);
  if (!validate(value)) {
    const errors = (validate.errors ?? []) as ErrorObject[];
    throw new Error(`${name} violated: ${ajv.errorsText(errors)}\n${JSON.stringify(value)}`);
  }
}
