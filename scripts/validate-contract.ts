// Second opinion on openapi.yaml beside Redocly: @readme/openapi-parser's schema validation.
import { compileErrors, validate } from '@readme/openapi-parser';
import { CONTRACT_PATH, loadContract } from '../src/contract/openapi-document.ts';

const result = await validate(loadContract() as never);
if (!result.valid || result.warnings.length > 0) {
  console.error(compileErrors(result));
  process.exit(1);
}
console.log(`${CONTRACT_PATH}: valid ${result.specification} document, no warnings`);
