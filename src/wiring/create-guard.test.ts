import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../config.ts';
import { ServiceError } from '../errors/service-error.ts';
import { startFakeUpstream } from '../testing/fake-upstream.ts';
import { createGuard } from './create-guard.ts';

describe('createGuard', async () => {
  // A Llama Guard double on loopback (tests only): "KILL" is S1.
  const upstream = await startFakeUpstream((body, res) => {
    const text = (body.messages as { content: string }[])[0]!.content;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ index: 0, message: { content: text.includes('KILL') ? 'unsafe\nS1' : 'safe' }, finish_reason: 'stop' }] }));
  });
  after(upstream.close);
  // A local classifier that cannot start: whether the guard consults it shows in the verdict.
  const settings = (mode: string) => loadConfig({ GUARD_UPSTREAM_BASE_URL: upstream.baseUrl, GUARD_UPSTREAM_MODE: mode, GUARD_PYTHON: '/nonexistent/python' });
  const check = async (mode: string, text: string) => {
    const guard = createGuard(settings(mode));
    try {
      return await guard.check('input', [{ source: 'messages[0]', text }], ['S1']);
    } finally {
      await guard.close();
    }
  };

  it('alone: the upstream reads the text and the local classifier is never started', async () => {
    assert.deepEqual((await check('alone', 'how do I KILL him')).matched.map((m) => m.code), ['S1']);
    assert.equal((await check('alone', 'how do I bake bread')).safe, true);
  });

  it('either: the local classifier is read too, so one that cannot start fails the check closed', async () => {
    await assert.rejects(check('either', 'how do I bake bread'), (err: unknown) => err instanceof ServiceError && err.code === 'guard_unavailable');
  });
});
