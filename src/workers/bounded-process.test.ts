import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ServiceError } from '../errors/service-error.ts';
import { runBounded } from './bounded-process.ts';

/** The pids of the processes whose command line is exactly `command`. */
const running = (command: string) => {
  try {
    return execFileSync('pgrep', ['-f', `^${command}$`]).toString().trim().split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when it finds none
  }
};

describe('runBounded', { timeout: 120_000 }, () => {
  it('kills the whole pipeline a program started at its deadline, and answers 503 task_timeout at once', async () => {
    const marker = `sleep 3600.${process.pid}`; // unique to this run
    await assert.rejects(runBounded('bash', ['-c', `${marker} | cat`], {
      what: 'test pipeline', limits: { timeoutMs: 500, memoryMb: 512 }, maxOutputBytes: 1024,
    }), (e: unknown) => e instanceof ServiceError && e.status === 503 && e.code === 'task_timeout');
    assert.deepEqual(running(marker), [], 'the pipeline outlived its deadline');
  });

  it('returns what the program wrote to stdout, given its input on stdin', async () => {
    const out = await runBounded('cat', [], { what: 'test copy', input: Buffer.from('hello'), limits: { timeoutMs: 60_000, memoryMb: 512 }, maxOutputBytes: 1024 });
    assert.equal(out.toString(), 'hello');
  });

  it('answers a program that cannot read the input with 400 invalid_content, naming the last line of its stderr', async () => {
    await assert.rejects(runBounded('bash', ['-c', 'echo "not a picture" >&2; exit 1'], { what: 'test decoder', limits: { timeoutMs: 60_000, memoryMb: 512 }, maxOutputBytes: 1024 }),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && e.code === 'invalid_content' && /not a picture/.test(e.message));
  });
});
