import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Request } from 'express';
import { ServiceError } from '../http/errors.ts';
import { createBearerAuth } from './bearer-auth.ts';

const auth = createBearerAuth({ verify: (key) => key === 'good' });
const outcome = (authorization: string) => {
  let passed: unknown = 'not called';
  auth({ get: () => authorization } as unknown as Request, {} as never, (err?: unknown) => (passed = err));
  return passed;
};

describe('bearerAuth', () => {
  it('lets a live key through and refuses others with 401', () => {
    assert.equal(outcome('Bearer good'), undefined);
    assert.ok(outcome('Bearer bad') instanceof ServiceError);
    assert.ok(outcome('Basic good') instanceof ServiceError);
  });

  // Node caps a header at 16 KB by default, but the pattern must not depend on that (hang detector only).
  it('is linear on 100 KB of adversarial header', { timeout: 60_000 }, () => {
    for (const header of [`Bearer ${' '.repeat(100_000)}x y`, `Bearer x${' '.repeat(100_000)}y`, `Bearer${'\t '.repeat(50_000)}`]) {
      assert.ok(outcome(header) instanceof ServiceError);
    }
  });
});
