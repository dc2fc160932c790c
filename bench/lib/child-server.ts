import { fork } from 'node:child_process';
import { createServer } from 'node:net';

export interface ProcessStats {
  /** User and system CPU time of the process so far, in microseconds. */
  cpuMicros: number;
  /** Heap in use after a full collection. */
  heapUsed: number;
  rss: number;
}

export interface ChildServer {
  port: number;
  stats(): Promise<ProcessStats>;
  stop(): Promise<void>;
}

/** A port nobody listens on now, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

/**
 * Runs `script` (TypeScript, through tsx) in a process of its own with `PORT` set, waits until
 * `readyPath` answers, and reads the process's CPU and heap through `process-stats.ts`.
 */
export async function startChildServer(script: string, env: Record<string, string>, readyPath = '/'): Promise<ChildServer> {
  const port = await freePort();
  const child = fork(script, [], {
    execArgv: ['--import', 'tsx', '--import', new URL('./process-stats.ts', import.meta.url).pathname],
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', BENCH_PROCESS_STATS: '1' },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${script} exited (${code})`))));
  exited.catch(() => {});
  const deadline = Date.now() + 120_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}${readyPath}`).then(() => true, () => false);
    if (up) break;
    if (child.exitCode !== null || Date.now() > deadline) await exited;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    stats: () => Promise.race([exited, new Promise<ProcessStats>((resolve) => {
      child.once('message', (m) => resolve(m as ProcessStats));
      child.send('stats');
    })]),
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    }),
  };
}
