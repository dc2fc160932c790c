import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineWorker, LineWorkerError } from './line-worker.ts';

/** A worker in plain Node: says it is ready, then answers each line as `answer` says. */
const workerRunning = (answer: string) => `
  const rl = require('node:readline').createInterface({ input: process.stdin });
  console.log(JSON.stringify({ ready: true, pid: process.pid }));
  rl.on('line', (line) => { const request = JSON.parse(line); ${answer} });
`;
const lineWorker = (answer: string, timeoutMs = 60_000) =>
  new LineWorker<{ n: number }, { n: number; pid: number }>({ name: 'the test worker', command: process.execPath, args: ['-e', workerRunning(answer)], timeoutMs });

describe('LineWorker', () => {
  it('starts once, answers requests in order, and reports what the worker said when ready', async () => {
    const worker = lineWorker('console.log(JSON.stringify({ n: request.n * 2, pid: process.pid }));');
    try {
      const answers = await Promise.all([1, 2, 3].map((n) => worker.request({ n })));
      assert.deepEqual(answers.map((a) => a.n), [2, 4, 6]);
      assert.equal(new Set(answers.map((a) => a.pid)).size, 1, 'one process for every request');
      assert.equal((await worker.hello()).pid, answers[0]!.pid);
    } finally {
      await worker.close();
    }
  });

  it('fails the request of a worker that dies, and starts a new one for the next', async () => {
    const worker = lineWorker('if (request.n === 0) process.exit(3); console.log(JSON.stringify({ n: request.n, pid: process.pid }));');
    try {
      const first = await worker.request({ n: 1 });
      await assert.rejects(worker.request({ n: 0 }), (e: unknown) => e instanceof LineWorkerError && e.kind === 'stopped');
      const after = await worker.request({ n: 2 });
      assert.equal(after.n, 2);
      assert.notEqual(after.pid, first.pid);
    } finally {
      await worker.close();
    }
  });

  it('kills a worker that never answers, at the deadline, and the next request gets a new one', async () => {
    const worker = lineWorker('if (request.n !== 0) console.log(JSON.stringify({ n: request.n, pid: process.pid }));', 1000);
    try {
      const first = await worker.request({ n: 1 });
      await assert.rejects(worker.request({ n: 0 }), (e: unknown) => e instanceof LineWorkerError && e.kind === 'timeout');
      const after = await worker.request({ n: 2 });
      assert.notEqual(after.pid, first.pid);
    } finally {
      await worker.close();
    }
  });

  it('passes on an error the worker answers, and keeps the worker', async () => {
    const worker = lineWorker('console.log(JSON.stringify(request.n < 0 ? { error: "negative" } : { n: request.n, pid: process.pid }));');
    try {
      await assert.rejects(worker.request({ n: -1 }), (e: unknown) => e instanceof LineWorkerError && e.kind === 'answer' && e.message === 'negative');
      assert.equal((await worker.request({ n: 5 })).n, 5);
    } finally {
      await worker.close();
    }
  });

  it('says why a worker could not start, from the last line of its stderr', async () => {
    const worker = new LineWorker({ name: 'the broken worker', command: process.execPath, args: ['-e', 'console.error("no model file"); process.exit(1)'], timeoutMs: 60_000 });
    await assert.rejects(worker.request({}), (e: unknown) => e instanceof LineWorkerError && e.kind === 'start' && /no model file/.test(e.message));
  });
});
