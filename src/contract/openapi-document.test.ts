import assert from 'node:assert/strict';
import { it } from 'node:test';
import { loadContract, mockCopy, validatorCopy } from './openapi-document.ts';

it('hands the validator a copy without discriminators and with a plain base path', () => {
  const contract = loadContract();
  const copy = validatorCopy(contract);
  assert.match(JSON.stringify(contract), /"discriminator"/, 'the contract itself keeps them');
  assert.doesNotMatch(JSON.stringify(copy), /"discriminator"/);
  assert.deepEqual(copy.servers, [{ url: '/v1' }]);
});

it('hands the validator a copy without the rules across fields (normalize-request.ts names them), the contract keeping them', () => {
  const contract = loadContract();
  const rules = (doc: Record<string, unknown>) => JSON.stringify(doc).match(/"if":/g)?.length ?? 0;
  assert.ok(rules(contract) >= 4, 'the contract states its rules across fields');
  assert.equal(rules(validatorCopy(contract)), 0);
});

it('hands Prism a copy whose paths carry the base path', () => {
  const copy = mockCopy(loadContract(), 'http://127.0.0.1:4010');
  assert.deepEqual(Object.keys(copy.paths as object), ['/v1/chat/completions', '/v1/models']);
});
