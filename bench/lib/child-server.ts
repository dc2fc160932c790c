import { fork } from 'node:child_process';
import { createServer } from 'node:net';

export interface ProcessStats {
  /** User and system CPU time of the process so far, in microseconds, after this reading's forced collection. */
  cpuMicros: number;
  /** The same, read just before that collection: a window from one reading's `cpuMicros` to the next's `cpuMicrosBeforeGc` holds neither. */
  cpuMicrosBeforeGc: number;
  /** Heap in use after a full collection. */
  heapUsed: number;
  rss: number;
  /** The event loop's delay since the previous `stats()` (p99 and max, ms); null before any sample. */
  loopP99Ms: number | null;
  loopMaxMs: number | null;
  /** The largest resident set the process has had so far. */
  maxRss: number;
  /** Time spent in garbage collection so far (young-generation collections apart), in microseconds, and how many there were. */
  gcMicros: number;
  gcCount: number;
  minorGcMicros: number;
  minorGcCount: number;
}

export interface ChildServer {
  port: number;
  stats(): Promise<ProcessStats>;
  /** Settles when the process ends, with `exit CODE` or `signal NAME`. */
  exited: Promise<string>;
  /** The end of what the process wrote to stderr (which is also passed on to ours). */
  stderrTail(): string;
  /** Kills the process (SIGKILL: a server stuck on a hostile input is not asked). */
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
 * Runs `script` (TypeScript through tsx, or the build's JavaScript, which tsx leaves alone) in a process of its own with `PORT` set, waits until
 * `readyPath` answers (with a status `ready` accepts: any, unless told), and reads the process's CPU, heap and event loop through `process-stats.ts`.
 * `nodeFlags` go to node before the script (e.g. `--max-semi-space-size=32`).
 */
export async function startChildServer(
  script: string, env: Record<string, string>, readyPath = '/', nodeFlags: string[] = [], ready: (status: number) => boolean = () => true,
): Promise<ChildServer> {
  const port = await freePort();
  const child = fork(script, [], {
    execArgv: [...nodeFlags, '--import', 'tsx', '--import', new URL('./process-stats.ts', import.meta.url).pathname],
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', BENCH_PROCESS_STATS: '1' },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(code !== null ? `exit ${code}` : `signal ${signal}`)));
  const failed = exited.then((how) => Promise.reject(new Error(`${script} ended (${how})`)));
  failed.catch(() => {});
  const deadline = Date.now() + 120_000;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}${readyPath}`).then((res) => ready(res.status), () => false);
    if (up) break;
    if (Date.now() > deadline) child.kill('SIGKILL');
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) await failed;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    exited,
    stderrTail: () => stderr,
    stats: () => Promise.race([failed, new Promise<ProcessStats>((resolve) => {
      child.once('message', (m) => resolve(m as ProcessStats));
      child.send('stats');
    })]),
    stop: async () => {
      child.kill('SIGKILL'); // a no-op once it has ended
      await exited;
    },
  };
}
