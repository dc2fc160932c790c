import assert from 'node:assert/strict';
import { it } from 'node:test';
import { newCompletionId } from './completion-id.ts';

it('mints distinct ids of the form service-<digits>, even within one millisecond', () => {
  const ids = Array.from({ length: 1000 }, () => newCompletionId(1_700_000_000_000));
  assert.ok(ids.every((id) => /^service-[0-9]+$/.test(id)));
  assert.equal(new Set(ids).size, ids.length);
});
