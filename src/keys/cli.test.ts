import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'keys-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function keys(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the keys CLI where KEYS_FILE\'s folder does not exist yet (issue 19)', { timeout: 120_000 }, () => {
  it('makes the folder, private, on the first write, and ensure-dev prints the development key', async () => {
    const file = join(dir, 'fresh', 'data', 'keys.json');
    const run = await keys(['ensure-dev'], { KEYS_FILE: file });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /shown once:\s+sk-\S+/);
    assert.equal(statSync(join(dir, 'fresh', 'data')).mode & 0o777, 0o700);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const [entry] = JSON.parse(readFileSync(file, 'utf8')) as Array<{ name: string }>;
    assert.equal(entry?.name, 'development');
  });

  it('a folder that cannot be made is one Configuration error line naming KEYS_FILE, exit code 2', async () => {
    const notAFolder = join(dir, 'a-file');
    writeFileSync(notAFolder, 'x');
    const run = await keys(['create', 'app'], { KEYS_FILE: join(notAFolder, 'data', 'keys.json') });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^Configuration error: KEYS_FILE: cannot create the folder .*a-file\/data/);
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.equal(run.stdout, '');
  });

  it('a setting that does not parse is the same kind of line', async () => {
    const run = await keys(['list'], { KEYS_FILE: join(dir, 'k.json'), PORT: 'not-a-port' });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^Configuration error: .*PORT/);
  });
});
