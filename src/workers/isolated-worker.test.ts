import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ServiceError } from '../errors/service-error.ts';
import { IsolatedWorker } from './isolated-worker.ts';

type TestJobs = {
  double(n: number): Promise<number>;
  refuse(): Promise<never>;
  spin(ms: number): Promise<string>;
  hoard(): Promise<never>;
  crash(): Promise<never>;
};

const run = promisify(execFile);
const is = (status: number, code: string) => (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code;

describe('IsolatedWorker', { timeout: 120_000 }, () => {
  const worker = new IsolatedWorker<TestJobs>(new URL('./test-jobs.ts', import.meta.url), 'test task', { timeoutMs: 1500, memoryMb: 64 });
  after(() => worker.close());

  it('lets the process exit with an idle worker left open (its stderr pipe included)', async () => {
    const script = `import { IsolatedWorker } from ${JSON.stringify(new URL('./isolated-worker.ts', import.meta.url).href)};
      const worker = new IsolatedWorker(new URL(${JSON.stringify(new URL('./test-jobs.ts', import.meta.url).href)}), 'test task', { timeoutMs: 5000, memoryMb: 64 });
      console.log(await worker.run('double', 4));`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 60_000 });
    assert.equal(stdout.trim(), '8'); // a process kept alive is killed by the timeout, which rejects
  });

  it('runs jobs in a worker process and returns their results', async () => {
    assert.deepEqual(await Promise.all([worker.run('double', 2), worker.run('double', 21)]), [4, 42]);
  });

  it("passes a job's own ServiceError back as it was", async () => {
    await assert.rejects(worker.run('refuse'), (e: unknown) => is(400, 'invalid_content')(e) && (e as ServiceError).param === 'messages[0]');
    assert.equal(await worker.run('double', 1), 2);
  });

  it('keeps the event loop free while a job is busy', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    assert.equal(await worker.run('spin', 400), 'spun');
    clearInterval(timer);
    assert.ok(ticks > 0, 'no timer fired while the worker was busy');
  });

  it('stops a job past its deadline with 503 task_timeout, then serves the next job on a fresh worker', async () => {
    await assert.rejects(worker.run('spin', 60_000), is(503, 'task_timeout'));
    assert.equal(await worker.run('double', 5), 10);
  });

  it('answers a job that exhausts the memory limit with 413 task_memory_exceeded, and recovers', async () => {
    await assert.rejects(worker.run('hoard'), is(413, 'task_memory_exceeded'));
    assert.equal(await worker.run('double', 6), 12);
  });

  it('answers a job whose worker dies with 500 task_failed, and recovers', async () => {
    const crashed = worker.run('crash');
    const next = worker.run('double', 7); // queued behind it: must not be failed by the old worker's exit
    await assert.rejects(crashed, is(500, 'task_failed'));
    assert.equal(await next, 14);
  });
});
