import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { renderTextImage, wordRecall } from '../../testing/fixtures.ts';
import { workerLimitsOf } from '../../wiring/create-tasks.ts';
import { TesseractReader } from './tesseract-reader.ts';

const run = promisify(execFile);

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
      // The next read is one sent once the death can be known (the process reaped: its exit seen,
      // though its pipes may not have closed yet). A read that reaches it as it dies is answered
      // 503 task_failed, "safe to retry".
      while (ocrProcesses().includes(pid)) await new Promise((r) => setTimeout(r, 20));
      const read = await reader.read(await renderTextImage(['Invoice 4721 from Northwind Traders']));
      assert.equal(wordRecall('Invoice 4721 Northwind Traders', read.text), 1, read.text);
      assert.notDeepEqual(ocrProcesses(), [pid]);
    } finally {
      await reader.close();
    }
  });

  it('answers a read past its deadline with 503 task_timeout, and nothing it left behind rejects unhandled', async () => {
    // In a process of its own, run until nothing is left to do: an engine still loading when the
    // deadline passed has finished by then, and anything it rejected has been reported.
    const module = (name: string) => JSON.stringify(new URL(name, import.meta.url).href);
    const script = `
      process.on('unhandledRejection', (reason) => { console.log('unhandled: ' + reason); });
      const { TesseractReader } = await import(${module('./tesseract-reader.ts')});
      const { renderTextImage } = await import(${module('../../testing/fixtures.ts')});
      // A test-only deadline of 1 ms: no read can finish within it.
      const reader = new TesseractReader({ timeoutMs: 1, memoryMb: 1024 });
      await reader.read(await renderTextImage(['Total due'])).then(() => console.log('read'), (e) => console.log(e.status + ' ' + e.code));`;
    const dir = await mkdtemp(join(tmpdir(), 'ocr-test-'));
    try {
      await writeFile(join(dir, 'deadline.mts'), script); // a file, not -e: tesseract.js's thread would inherit --input-type
      const { stdout } = await run(process.execPath, ['--import', 'tsx', join(dir, 'deadline.mts')], { timeout: 240_000 });
      assert.equal(stdout.trim(), '503 task_timeout');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
