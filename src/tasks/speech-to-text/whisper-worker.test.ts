import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ServiceError } from '../../errors/service-error.ts';
import { speech } from '../../testing/fixtures.ts';
import { WhisperWorker } from './whisper-worker.ts';

/**
 * A stand-in for the Python worker that says it is ready, then closes its stdin and never answers:
 * what a worker being killed, or wedged, looks like to the server writing to it.
 */
const DEAF_WORKER = `#!/bin/sh
echo '{"ready": true}'
exec 0<&-
exec sleep 3600
`;

describe('WhisperWorker with a worker that stops reading', { timeout: 120_000 }, () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'stt-test-'));
    await writeFile(join(dir, 'python'), DEAF_WORKER);
    await chmod(join(dir, 'python'), 0o755);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('answers 503 task_timeout at the deadline: the write it could not take (EPIPE) is no crash', async () => {
    const worker = new WhisperWorker(join(dir, 'python'), 1, { timeoutMs: 3000, memoryMb: 1024, maxSeconds: 20 });
    try {
      await assert.rejects(worker.transcribe(speech('Hello there.', 'wav'), 'a.wav'),
        (e: unknown) => e instanceof ServiceError && e.status === 503 && e.code === 'task_timeout');
    } finally {
      await worker.close();
    }
  });
});
