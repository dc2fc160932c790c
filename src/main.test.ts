import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
// The upstream engine starts without loading a model; nothing here ever reaches it.
const BASE = { ENGINE: 'upstream', UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', HOST: '127.0.0.1', KEYS_FILE: '/nonexistent/keys.json' };

/** Starts the service with `env`; resolves with its exit code and stderr (it must exit by itself). */
function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', MAIN], { env: { ...process.env, ...BASE, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.stdout.on('data', (c) => (stdout += c));
    child.on('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('a configuration that cannot work stops the start with one clear line and a non-zero exit (issue 9, finding 9)', { timeout: 120_000 }, () => {
  it('a port in use', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => taken.once('listening', r));
    const port = String((taken.address() as { port: number }).port);
    try {
      const run = await start({ PORT: port });
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, new RegExp(`^Configuration error: cannot listen on 127\\.0\\.0\\.1:${port}.*EADDRINUSE`, 'm'));
      assert.doesNotMatch(run.stdout, /Chat completion service on/, 'the start banner was printed');
    } finally {
      taken.close();
    }
  });

  for (const [name, env, pattern] of [
    ['a host that is not this machine', { HOST: '203.0.113.7', PORT: '0' }, /^Configuration error: cannot listen on 203\.0\.113\.7/m],
    ['an upstream URL that is not a URL', { UPSTREAM_BASE_URL: 'localhost:8000/v1' }, /^Configuration error: UPSTREAM_BASE_URL must be an http\(s\) URL/m],
    ['a model file that does not exist', { ENGINE: 'local', UPSTREAM_BASE_URL: '', MODEL_PATH: '/nonexistent/model.gguf' }, /^Configuration error: MODEL_PATH: no model file at \/nonexistent\/model\.gguf/m],
  ] as const) {
    it(name, async () => {
      const run = await start(env);
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, pattern);
      assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    });
  }
});

describe('at start, the temp directories of a crashed run are removed, and no live one (issue 21, finding 9)', { timeout: 120_000 }, () => {
  it('removes those of a dead process or past the age bound, keeps those of a live one, a recent unnamed one, and others', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'main-tmp-'));
    try {
      const dead = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, ['-e', '0']);
        child.on('exit', () => resolve(child.pid!));
      });
      const made = (name: string, ageMs = 0) => {
        const dir = join(tmp, name);
        mkdirSync(dir);
        writeFileSync(join(dir, 'input'), 'a caller\'s file');
        const at = (Date.now() - ageMs) / 1000;
        utimesSync(dir, at, at);
        return name;
      };
      const DAY = 24 * 3600 * 1000;
      const stale = [made(`service-video-${dead}-a1B2c3`), made(`stt-${dead}-a1B2c3`), made('stt-Zz9yX8', 2 * DAY), made(`service-video-${process.pid}-old123`, 2 * DAY)];
      const kept = [made(`service-video-${process.pid}-a1B2c3`), made(`stt-${process.pid}-a1B2c3`), made('service-video-Zz9yX8'), made('video-a1B2c3', 2 * DAY), made(`other-${dead}-a1B2c3`)];
      // A port in use ends the start early: the clean-up comes before anything that may fail.
      const taken = createServer().listen(0, '127.0.0.1');
      await new Promise((r) => taken.once('listening', r));
      try {
        const run = await start({ PORT: String((taken.address() as { port: number }).port), TMPDIR: tmp });
        assert.notEqual(run.code, 0);
      } finally {
        taken.close();
      }
      const ours = readdirSync(tmp).filter((name) => [...stale, ...kept].includes(name)); // tsx has its own there too
      assert.deepEqual(ours.sort(), [...kept].sort(), `stale: ${stale.join(', ')}`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
