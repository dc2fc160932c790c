import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Request } from 'express';
import { ServiceError } from '../errors/service-error.ts';
import { createBearerAuth } from './bearer-auth.ts';

const auth = createBearerAuth({ resolve: async (key) => (key === 'good' ? { keyId: 'k', name: 'good', rpm: null, tpm: null } : undefined) });
const outcome = (authorization: string) => new Promise<unknown>((resolve) => {
  const res = { locals: {} as Record<string, unknown> };
  void auth({ get: () => authorization } as unknown as Request, res as never, (err?: unknown) => resolve(err ?? res.locals.caller));
});

describe('bearerAuth', () => {
  it('puts the caller of a live key on the response locals and refuses others with 401', async () => {
    assert.deepEqual(await outcome('Bearer good'), { keyId: 'k', name: 'good', rpm: null, tpm: null });
    assert.ok((await outcome('Bearer bad')) instanceof ServiceError);
    assert.ok((await outcome('Basic good')) instanceof ServiceError);
  });

  // Node caps a header at 16 KB by default, but the pattern must not depend on that (hang detector only).
  it('is linear on 100 KB of adversarial header', { timeout: 60_000 }, async () => {
    for (const header of [`Bearer ${' '.repeat(100_000)}x y`, `Bearer x${' '.repeat(100_000)}y`, `Bearer${'\t '.repeat(50_000)}`]) {
      assert.ok((await outcome(header)) instanceof ServiceError);
    }
  });
});
