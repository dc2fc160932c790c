// SIGTERM with streams in flight: each one finishes, or ends with the error frame and [DONE];
// none is just cut, and the process exits 0 (issue 9, finding 4).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { delta, startFakeUpstream } from './testing/fake-upstream.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

const freePort = () => new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as { port: number };
    probe.close(() => resolve(port));
  });
});

/** An upstream that streams one word every 100 ms, 30 words in all. */
async function slowUpstream() {
  return startFakeUpstream((_body, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return clearInterval(timer);
      if (sent++ < 30) return void res.write(`data: ${JSON.stringify(delta({ content: 'word ' }))}\n\n`);
      clearInterval(timer);
      res.end(`data: ${JSON.stringify(delta({}, 'stop'))}\n\ndata: [DONE]\n\n`);
    }, 100);
  });
}

/** `GET /readyz` on the operational port (METRICS_PORT), polled until it answers `status`. */
async function readyzUntil(port: number, status: string): Promise<number> {
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    const body = (await res.json()) as { status: string };
    if (body.status === status) return res.status;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function shutDownWithStreams(graceMs: number) {
  const upstream = await slowUpstream();
  const [port, operationalPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: {
      ...process.env, ENGINE: 'upstream', UPSTREAM_BASE_URL: upstream.baseUrl, PORT: String(port), METRICS_PORT: String(operationalPort),
      SERVICE_API_KEY: 'sk-drain', KEYS_FILE: '/nonexistent/keys.json', SHUTDOWN_GRACE_MS: String(graceMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  // A failure (or a timeout) must not leave the server or the upstream running: the test file would never end.
  const cleanUp = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await upstream.close();
  };
  cleanUps.add(cleanUp);
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => /Chat completion service on/.test(String(chunk)) && resolve());
      child.on('exit', (code) => reject(new Error(`the service ended before it was ready (exit ${code})`)));
    });
    assert.equal(await readyzUntil(operationalPort, 'ready'), 200); // the guard's models loaded
    // SIGTERM only once every stream is answered (its headers are in): a fixed wait let a slow
    // machine send the signal before a stream had connected, and its request was refused.
    const responses = await Promise.all(Array.from({ length: 5 }, (_, i) => fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: 'Bearer sk-drain', 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true' },
      body: JSON.stringify({ model: 'service', stream: true, messages: [{ role: 'user', content: `story ${i}` }] }),
    })));
    assert.deepEqual(responses.map((res) => res.status), [200, 200, 200, 200, 200]);
    const streams = responses.map((res) => res.text());
    child.kill('SIGTERM');
    const draining = await readyzUntil(operationalPort, 'draining'); // the operational port stays up while draining
    const bodies = await Promise.all(streams);
    const code = await exited;
    return { bodies, code, draining };
  } finally {
    cleanUps.delete(cleanUp);
    await cleanUp();
  }
}

const cleanUps = new Set<() => Promise<void>>();
after(() => Promise.all([...cleanUps].map((cleanUp) => cleanUp())));

describe('SIGTERM with 5 streams in flight', { timeout: 120_000 }, () => {
  it('flips /readyz to 503, lets them finish within SHUTDOWN_GRACE_MS, each ending with finish_reason and [DONE], and exits 0', async () => {
    const { bodies, code, draining } = await shutDownWithStreams(30_000);
    for (const body of bodies) {
      assert.match(body, /"finish_reason":"stop"/);
      assert.match(body, /data: \[DONE\]\n\n$/);
    }
    assert.equal(code, 0);
    assert.equal(draining, 503, '/readyz answers 503 while draining');
  });

  it('ends the ones still running when the grace period is over with the error frame and [DONE], and exits 0', async () => {
    const { bodies, code } = await shutDownWithStreams(300);
    for (const body of bodies) {
      assert.match(body, /"code":"shutting_down"/);
      assert.match(body, /data: \[DONE\]\n\n$/);
    }
    assert.equal(code, 0);
  });
});
