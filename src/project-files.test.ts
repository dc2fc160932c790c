import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { PROJECT_ROOT, projectFile, RUNS_BUILD, runnableModule } from './project-files.ts';

describe('project files', () => {
  it('finds the repository root from the sources (tests run them through tsx)', () => {
    assert.equal(RUNS_BUILD, false);
    assert.ok(existsSync(`${PROJECT_ROOT}package.json`), PROJECT_ROOT);
  });

  it('resolves the files read beside the code', () => {
    for (const path of ['openapi.yaml', 'src/guard/text/guard_worker.py', 'src/tasks/speech-to-text/whisper_worker.py']) {
      assert.ok(existsSync(projectFile(path)), path);
    }
  });

  it('runs a worker module from its sources when the process does', () => {
    const module = new URL('./workers/isolated-worker.ts', import.meta.url);
    assert.equal(runnableModule(module), projectFile('src/workers/isolated-worker.ts'));
  });
});
