import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { renderTextImage, wordRecall } from '../../testing/fixtures.ts';
import { workerLimitsOf } from '../create-tasks.ts';
import { TesseractReader } from './tesseract-reader.ts';

/** This process's children running the OCR worker module. */
const ocrProcesses = () => {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'tesseract-reader.worker']).toString().trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when it finds none
  }
};

describe('TesseractReader', { timeout: 300_000 }, () => {
  it('runs Tesseract in a process of its own: when that dies, the server does not, and the next read starts a new one', async () => {
    const reader = new TesseractReader(workerLimitsOf(loadConfig({})));
    try {
      await reader.warm();
      const [pid, ...others] = ocrProcesses();
      assert.ok(pid !== undefined && others.length === 0, 'no OCR process of its own');
      process.kill(pid, 'SIGKILL'); // as the kernel or V8 would end it past its memory
      const read = await reader.read(await renderTextImage(['Invoice 4721 from Northwind Traders']));
      assert.equal(wordRecall('Invoice 4721 Northwind Traders', read.text), 1, read.text);
      assert.notDeepEqual(ocrProcesses(), [pid]);
    } finally {
      await reader.close();
    }
  });

  it('answers a read past its deadline with 503 task_timeout, and leaves no rejection unhandled once closed', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    // A test-only deadline of 1 ms: no read can finish within it.
    const reader = new TesseractReader({ ...workerLimitsOf(loadConfig({})), timeoutMs: 1 });
    try {
      await assert.rejects(reader.read(await renderTextImage(['Total due'])), (e: unknown) => e instanceof ServiceError && e.status === 503 && e.code === 'task_timeout');
    } finally {
      await reader.close();
      await new Promise((resolve) => setImmediate(resolve));
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(unhandled, []);
  });
});
