import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadContract, validatorCopy } from './openapi-document.ts';

it('hands the validator a copy without discriminators and with a plain base path', () => {
  const contract = loadContract();
  const copy = validatorCopy(contract);
  assert.match(JSON.stringify(contract), /"discriminator"/, 'the contract itself keeps them');
  assert.doesNotMatch(JSON.stringify(copy), /"discriminator"/);
  assert.deepEqual(copy.servers, [{ url: '/v1' }]);
});
