// The process-level fault policy (issue 21, finding 1): an uncaught exception or an unhandled
// rejection is logged as JSON with the requests in flight, the service drains, and exits 1.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { beginRequest } from '../request-scope.ts';
import { delta, startFakeUpstream } from '../testing/fake-upstream.ts';
import { createFaultHandler } from './faults.ts';

function recorder(drain: () => Promise<void> = async () => {}) {
  const logged: Record<string, unknown>[] = [];
  const exits: number[] = [];
  const drains: string[] = [];
  const handle = createFaultHandler({
    log: { fatal: (fields, message) => void logged.push({ ...fields, message }) },
    drain: (reason) => (drains.push(reason), drain()),
    exit: (code) => void exits.push(code),
    deadlineMs: 60_000,
  });
  return { handle, logged, exits, drains };
}

/** The handler sets process.exitCode for the real process; a test puts it back. */
async function keepingExitCode(fn: () => Promise<void>) {
  const before = process.exitCode;
  try {
    await fn();
  } finally {
    process.exitCode = before;
  }
}

describe('the fault handler', () => {
  it('logs the fault with the requests in flight, drains once, then exits 1', () => keepingExitCode(async () => {
    let finishDrain = () => {};
    const r = recorder(() => new Promise<void>((resolve) => (finishDrain = resolve)));
    const fault = new Error('boom');
    const response = Object.assign(new EventEmitter(), { locals: {} }) as unknown as Response;
    beginRequest(response, { requestId: 'req-7', zdr: false });
    r.handle('uncaughtException', fault);
    response.emit('close');
    r.handle('unhandledRejection', 'a second one, while draining');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(r.exits, [], 'exited before the drain ended');
    assert.deepEqual(r.drains, ['uncaughtException']);
    finishDrain();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(r.exits, [1]);
    assert.equal(r.logged.length, 2);
    assert.deepEqual([r.logged[0]!.kind, r.logged[0]!.requestsInFlight, r.logged[0]!.err], ['uncaughtException', ['req-7'], fault]);
    assert.match(String(r.logged[0]!.message), /1 requests in flight \(req-7\).*exiting with 1/);
    assert.deepEqual(r.logged[1]!.requestsInFlight, [], 'a request that has ended is not named');
    assert.equal(process.exitCode, 1);
  }));

  it('exits 1 even when the drain fails', () => keepingExitCode(async () => {
    const r = recorder(() => Promise.reject(new Error('drain failed')));
    r.handle('unhandledRejection', new Error('x'));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(r.exits, [1]);
  }));
});

/** main.ts with a fault to inject on SIGUSR2. */
const MAIN_WITH_HOOK = fileURLToPath(new URL('../testing/fault-hook.ts', import.meta.url));
const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

describe('a fault in the running service', { timeout: 180_000 }, () => {
  for (const fault of ['exception', 'rejection']) {
    it(`(${fault}) is logged as JSON with the request in flight; the stream in flight ends with [DONE]; the process exits 1`, async () => {
      // An upstream that streams a word every 100 ms, 20 in all: in flight when the fault comes.
      const upstream = await startFakeUpstream((_b, res) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        let sent = 0;
        const timer = setInterval(() => {
          if (res.destroyed) return clearInterval(timer);
          if (sent++ < 20) return void res.write(`data: ${JSON.stringify(delta({ content: 'word ' }))}\n\n`);
          clearInterval(timer);
          res.end(`data: ${JSON.stringify(delta({}, 'stop'))}\n\ndata: [DONE]\n\n`);
        }, 100);
      });
      const port = await freePort();
      const child = spawn(process.execPath, ['--import', 'tsx', MAIN_WITH_HOOK], {
        env: {
          ...process.env, FAULT: fault, ENGINE: 'upstream', UPSTREAM_BASE_URL: upstream.baseUrl, HOST: '127.0.0.1', PORT: String(port),
          SERVICE_API_KEY: 'sk-fault', KEYS_FILE: '/nonexistent/keys.json', SHUTDOWN_GRACE_MS: '10000', LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout!.on('data', (c) => (stdout += c));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      try {
        while (!/Chat completion service on/.test(stdout)) {
          assert.equal(child.exitCode, null, `the service ended before it was ready:\n${stdout}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
          method: 'POST',
          headers: { Authorization: 'Bearer sk-fault', 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true', 'x-request-id': 'stream-in-flight' },
          body: JSON.stringify({ model: 'service', stream: true, messages: [{ role: 'user', content: 'a story' }] }),
        });
        assert.equal(res.status, 200);
        const reader = res.body!.getReader();
        await reader.read(); // the stream has started
        child.kill('SIGUSR2');
        let text = '';
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += Buffer.from(r.value).toString();
        assert.match(text, /data: \[DONE\]\n\n$/, 'the stream in flight was cut');
        assert.equal(await exited, 1);
        const lines = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
        const fatal = lines.find((l) => l.level === 60);
        assert.ok(fatal, `no fatal line in:\n${stdout}`);
        assert.equal(fatal.kind, fault === 'exception' ? 'uncaughtException' : 'unhandledRejection');
        assert.deepEqual(fatal.requestsInFlight, ['stream-in-flight']);
        assert.match(JSON.stringify(fatal.err), /injected/);
      } finally {
        child.kill('SIGKILL');
        await upstream.close();
      }
    });
  }
});
