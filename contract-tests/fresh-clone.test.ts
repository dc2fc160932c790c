// What a new user types first, on a fresh clone of HEAD: `make run` and the README's curl
// requests, `npm run keys -- create`, `make mock`, `make conformance`. The clone gets the installed
// node_modules, model and environments as links (and its files are dated before them, so make
// sees nothing to install): seconds, not the minutes of a real setup, but every step after the
// install runs as it would for that user, data/ and all.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
/** What the setup installs, outside git: linked into each clone. */
const INSTALLED = ['node_modules', 'models', '.venv', '.venv-stt', '.venv-guard', '.cache/guard', '.cache/guard-data', '.cache/docs'];
/** A user's shell: none of the service's settings, nor the make of the suite that runs this. */
const USER_ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8' };
/** A hang detector: a step that takes longer is stuck, not slow. */
const STEP_MS = 5 * 60_000;

const clones: string[] = [];
const processes: ChildProcess[] = [];

function freshClone(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'fresh-clone-')), 'service');
  clones.push(dir);
  execFileSync('git', ['clone', '--quiet', ROOT, dir]);
  mkdirSync(join(dir, '.cache'));
  for (const path of INSTALLED) symlinkSync(join(ROOT, path), join(dir, path));
  // The install stamps of the system packages, as a machine that has them carries them.
  for (const stamp of ['system-packages-serve.installed', 'system-packages.installed']) {
    execFileSync('touch', [join(dir, '.cache', stamp)]);
  }
  // Older than every installed file, so make takes the links as up to date.
  execFileSync('bash', ['-c', 'git ls-files -z | xargs -0 touch -h -d 2000-01-01'], { cwd: dir });
  return dir;
}

/** Runs to the end; the output and exit code. */
function run(cwd: string, command: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, env: USER_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('close', (code) => done({ code, out }));
  });
}

/** Starts a long-running command in a process group of its own; its output so far is in `out()`. */
function serve(cwd: string, args: string[]) {
  const child = spawn('make', args, { cwd, env: USER_ENV, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  processes.push(child);
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const exited = new Promise<number | null>((done) => child.on('close', (code) => done(code)));
  return { child, out: () => out, exited };
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Two free ports in a row (the mock puts Prism on the port after its own). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const next = createServer();
    const ok = await new Promise<boolean>((done) => next.once('error', () => done(false)).listen(port + 1, '127.0.0.1', () => done(true)));
    if (ok) {
      await new Promise((r) => next.close(r));
      return port;
    }
  }
}

type Served = ReturnType<typeof serve>;

/** Polls `probe` until it gives a value; fails at once when the command it waits on has ended. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, served: Served): Promise<T> {
  const give = Date.now() + STEP_MS;
  let last = 'no answer yet';
  while (Date.now() < give) {
    if (served.child.exitCode !== null || served.child.signalCode !== null) {
      throw new Error(`${what}: the command ended first; its output:\n${served.out()}`);
    }
    const value = await probe().catch((err: Error) => void (last = err.message));
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not happen (last: ${last}); output so far:\n${served.out()}`);
}

/** The process whose command line runs the server, among the descendants of `pid`. */
function serverProcess(pid: number): number | undefined {
  const children = (parent: number) => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => {
    try {
      return Number(readFileSync(`/proc/${p}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]) === parent;
    } catch {
      return false;
    }
  });
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    for (const child of children(next)) {
      const cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0');
      if (cmdline.some((arg) => arg.endsWith('dist/src/main.js'))) return child;
      queue.push(child);
    }
  }
  return undefined;
}

/** The Quick start's curl commands, exactly as the README writes them. */
function readmeCurls(clone: string): string[] {
  const readme = readFileSync(join(clone, 'README.md'), 'utf8');
  const quickStart = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1));
  const block = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('curl'));
  assert.ok(block, 'the Quick start has a block of curl commands');
  return block.split(/\n\s*\n/).map((c) => c.trim()).filter((c) => c.startsWith('curl'));
}

after(async () => {
  for (const child of processes) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch { /* gone already */ }
    }
  }
  for (const clone of clones) rmSync(join(clone, '..'), { recursive: true, force: true });
});

describe('a new user on a fresh clone (issue 19)', { timeout: 30 * 60_000 }, () => {
  it('npm run keys -- create NAME prints a key, the keys file in a private folder made for it', async () => {
    const clone = freshClone();
    assert.equal(existsSync(join(clone, 'data')), false, 'a clone has no data/');
    const { code, out } = await run(clone, 'npm', ['run', '--silent', 'keys', '--', 'create', 'first-app']);
    assert.equal(code, 0, out);
    assert.match(out, /^sk-\S+$/m);
    assert.equal(statSync(join(clone, 'data')).mode & 0o777, 0o700);
  });

  describe('make run, then the README\'s requests, make mock and make conformance', () => {
    let clone: string;
    let port: number;
    let service: Served;
    let key: string;

    before(async () => {
      clone = freshClone();
      port = await freePort();
      service = serve(clone, ['run', `PORT=${port}`]);
      key = await until('make run printing the development key', async () => service.out().match(/shown once:\s+(sk-\S+)/)?.[1], service);
      await until('the service becoming ready', async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok ? true : undefined), service);
    });

    it('answers the README\'s three requests: plain, streamed, a tool call', async () => {
      const [plain, streamed, toolCall, ...rest] = readmeCurls(clone);
      assert.ok(plain && streamed && toolCall, 'three curl commands');
      assert.equal(rest.length, 0, 'exactly three curl commands');
      const curl = async (command: string) => {
        const script = `${command.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`)} -w '\\n%{http_code}'`;
        const { code, out } = await run(clone, 'bash', ['-c', `KEY='${key}' && ${script}`]);
        assert.equal(code, 0, out);
        const status = out.slice(out.lastIndexOf('\n') + 1);
        assert.equal(status, '200', out);
        return out.slice(0, out.lastIndexOf('\n'));
      };

      const answer = JSON.parse(await curl(plain));
      assert.equal(answer.object, 'chat.completion');
      assert.match(answer.id, /^service-\d+$/);
      assert.equal(typeof answer.choices[0].message.content, 'string');
      assert.ok(answer.choices[0].message.content.length > 0);

      const events = (await curl(streamed)).split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
      assert.equal(events.at(-1), '[DONE]');
      const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
      assert.ok(chunks.length >= 2, 'a stream of several chunks');
      for (const chunk of chunks) assert.equal(chunk.object, 'chat.completion.chunk');
      assert.ok(chunks.some((c) => c.choices[0]?.finish_reason), 'a chunk that ends the choice');

      const call = JSON.parse(await curl(toolCall));
      assert.equal(call.choices[0].finish_reason, 'tool_calls');
      const [first] = call.choices[0].message.tool_calls;
      assert.equal(first.function.name, 'get_weather');
      assert.equal(typeof JSON.parse(first.function.arguments).city, 'string');
    });

    it('make conformance against the running service exits 0', async () => {
      const report = join(clone, '..', 'report');
      const { code, out } = await run(clone, 'make', ['conformance', `BASE_URL=http://127.0.0.1:${port}/v1`, `API_KEY=${key}`, `REPORT=${report}`]);
      assert.equal(code, 0, out.slice(-4000));
      assert.ok(existsSync(join(report, 'junit.xml')));
    });

    it('make mock answers its first request', async () => {
      const mockPort = await freePortPair();
      const mock = serve(clone, ['mock', `MOCK_PORT=${mockPort}`]);
      try {
        const answer = await until('the mock answering', async () => {
          const res = await fetch(`http://127.0.0.1:${mockPort}/v1/chat/completions`, {
            method: 'POST', headers: { authorization: 'Bearer any', 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'service', messages: [{ role: 'user', content: 'Hi' }] }),
          });
          if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
          return res.json() as Promise<{ object: string }>;
        }, mock);
        assert.equal(answer.object, 'chat.completion', `${JSON.stringify(answer)}\n${mock.out().slice(-4000)}`);
      } finally {
        process.kill(-mock.child.pid!, 'SIGTERM');
        await mock.exited;
      }
    });

    it('SIGTERM ends the service, and make run, with exit code 0', async () => {
      const server = serverProcess(service.child.pid!);
      assert.ok(server, 'the server process among make run\'s');
      process.kill(server, 'SIGTERM');
      assert.equal(await service.exited, 0, service.out().slice(-4000));
    });
  });
});
