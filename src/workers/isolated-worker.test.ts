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
  // The deadline counts from when a job is queued, so it covers starting a fresh worker (tsx) too.
  const worker = new IsolatedWorker<TestJobs>(new URL('./test-jobs.ts', import.meta.url), 'test task', { timeoutMs: 5000, memoryMb: 64 });
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

describe('IsolatedWorker queue', { timeout: 120_000 }, () => {
  const module = new URL('./test-jobs.ts', import.meta.url);

  it('counts a deadline from when the job was queued: a job still waiting at it is refused with 503 task_timeout', async () => {
    const worker = new IsolatedWorker<TestJobs>(module, 'test task', { timeoutMs: 1500, memoryMb: 64 });
    try {
      const stuck = worker.run('spin', 60_000);
      const behind = worker.run('double', 5); // queued at the same time: its deadline passes with the first's
      await assert.rejects(stuck, is(503, 'task_timeout'));
      await assert.rejects(behind, is(503, 'task_timeout'));
      assert.equal(await worker.run('double', 6), 12);
    } finally {
      await worker.close();
    }
  });

  it('refuses a job past the bound of waiting jobs with 503 task_queue_full', async () => {
    const worker = new IsolatedWorker<TestJobs>(module, 'test task', { timeoutMs: 1500, memoryMb: 64, maxQueued: 1 });
    try {
      const running = worker.run('spin', 60_000);
      const waiting = worker.run('double', 1);
      await assert.rejects(worker.run('double', 2), (e: unknown) => is(503, 'task_queue_full')(e) && /TASK_QUEUE_MAX/.test((e as Error).message));
      await Promise.allSettled([running, waiting]);
    } finally {
      await worker.close();
    }
  });

  it("refuses a caller's job past its share with 429, serves the other callers, and takes callers in turns", async () => {
    const worker = new IsolatedWorker<TestJobs>(module, 'test task', { timeoutMs: 60_000, memoryMb: 64, perCaller: 3 });
    try {
      const done: string[] = [];
      const track = (name: string, job: Promise<unknown>) => job.then(() => void done.push(name));
      const jobs = [
        track('a1', worker.runFor('key-a', 'spin', 300)),
        track('a2', worker.runFor('key-a', 'double', 1)),
        track('a3', worker.runFor('key-a', 'double', 2)),
      ];
      await assert.rejects(worker.runFor('key-a', 'double', 3), (e: unknown) => is(429, 'rate_limit_exceeded')(e) && /TASK_QUEUE_PER_CALLER/.test((e as Error).message));
      jobs.push(track('b1', worker.runFor('key-b', 'double', 4)));
      await Promise.all(jobs);
      assert.deepEqual(done, ['a1', 'a2', 'b1', 'a3'], 'key-b waits for one of key-a\'s jobs, not all of them');
    } finally {
      await worker.close();
    }
  });
});

