import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { makeTempDir, removeStaleTempDirs } from './temp-dirs.ts';

const VIDEO_FILE = fileURLToPath(new URL('../inputs/video/video-file.ts', import.meta.url));
const BASE = mkdtempSync(join(tmpdir(), 'temp-dirs-test-'));
after(() => rmSync(BASE, { recursive: true, force: true }));

/** A process that is killed while it holds a caller's video in its temp directory; resolves with that directory. */
async function killedWhileReading(): Promise<string> {
  const script = `import { withVideoFile } from ${JSON.stringify(VIDEO_FILE)};
    withVideoFile(Buffer.from('a caller video'), (file, dir) => { console.log(dir); return new Promise(() => setInterval(() => {}, 1000)); });`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, TMPDIR: BASE }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [dir] = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next().then((l) => [String(l.value)]);
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return dir!;
}

describe('temp directories', { timeout: 120_000 }, () => {
  it("are left by a killed run, and removed at the next start, while a live process's stay", async () => {
    const crashed = await killedWhileReading();
    assert.ok(existsSync(join(crashed, 'input')), 'the killed run left the caller\'s file');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = BASE;
    const mine = await makeTempDir('stt-').finally(() => (process.env.TMPDIR = saved));
    assert.match(basename(mine), new RegExp(`^stt-${process.pid}-`));
    const { removed, failed } = await removeStaleTempDirs(BASE);
    assert.deepEqual([removed, failed], [[basename(crashed)], []]);
    assert.equal(existsSync(crashed), false);
    assert.equal(existsSync(mine), true, 'a live process\'s directory was removed');
  });
});
