import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';

/** What to run, as a supervised child. */
export interface ChildSpec {
  command: string;
  args: string[];
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /** An IPC channel besides the pipes (a Node worker's `process.send`); Buffers cross as bytes. */
  ipc?: boolean;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The last characters a child wrote to stderr: enough to say why it failed. */
const STDERR_TAIL = 2000;

/**
 * A child process in a process group of its own, with its stderr's tail kept for diagnostics.
 * Built on node:child_process rather than execa: what is needed here (a detached group killed as
 * one, unref'd handles, an IPC channel with advanced serialization) is a few lines of it, and a new
 * dependency would need approval.
 */
export class Child {
  readonly process: ChildProcessWithoutNullStreams;
  /** Set once the process has exited and its pipes are closed (its whole output read). */
  status: ExitStatus | undefined;
  private readonly watchers = new Set<(status: ExitStatus) => void>();
  private stderr = '';
  private killed = false;

  constructor(spec: ChildSpec) {
    this.process = spawn(spec.command, spec.args, {
      env: { ...process.env, ...spec.env },
      stdio: spec.ipc ? ['pipe', 'pipe', 'pipe', 'ipc'] : ['pipe', 'pipe', 'pipe'],
      serialization: 'advanced',
      // Its own process group, so that kill() reaches what it started too (a shell's pipeline).
      detached: true,
    }) as ChildProcessWithoutNullStreams;
    // A child that exits or closes its stdin makes a write fail with EPIPE: its exit says why.
    this.process.stdin.on('error', () => {});
    // A worker on IPC has nothing to say on stdout; unread, the pipe would never end, nor 'close' come.
    if (spec.ipc) this.process.stdout.resume();
    this.process.stderr.setEncoding('utf8').on('data', (text: string) => (this.stderr = (this.stderr + text).slice(-STDERR_TAIL)));
    const closed = (status: ExitStatus) => {
      if (this.status) return;
      this.status = status;
      for (const watcher of this.watchers) watcher(status);
      this.watchers.clear();
    };
    // 'error': it never started, or a message could not be sent to it (it died: its close says so).
    this.process.on('error', () => this.process.pid === undefined && closed({ code: null, signal: null }));
    this.process.once('close', (code, signal) => closed({ code, signal }));
  }

  /** Calls `watcher` when the child has closed (at once if it has); returns what stops watching. */
  whenClosed(watcher: (status: ExitStatus) => void): () => void {
    if (this.status) {
      watcher(this.status);
      return () => {};
    }
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Resolves once the process runs; rejects when it cannot start (no such program). */
  spawned(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.process.pid !== undefined) return resolve();
      this.process.once('spawn', resolve);
      this.process.once('error', reject);
    });
  }

  /** What it wrote to stderr last. */
  stderrTail(): string {
    return this.stderr;
  }

  /** The last line of its stderr, or `fallback`. */
  lastStderrLine(fallback: string): string {
    return this.stderr.trim().split('\n').at(-1) || fallback;
  }

  /** False once it has exited, been killed, or closed its output: no job should be sent to it. */
  get alive(): boolean {
    return !this.killed && this.status === undefined && this.process.exitCode === null && this.process.signalCode === null && !this.process.stdout.readableEnded;
  }

  /** Ends the whole process group at once (SIGKILL: a stuck engine is not asked). */
  kill(): void {
    this.killed = true;
    const pid = this.process.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }

  /**
   * An idle child must not keep this process alive (a busy one is kept alive by its job's
   * deadline timer). Its process, its pipes and its IPC channel are each a handle of their own.
   */
  unref(): void {
    this.process.unref();
    for (const stream of [this.process.stdin, this.process.stdout, this.process.stderr]) (stream as { unref?(): void }).unref?.();
    (this.process.channel as { unref?(): void } | undefined)?.unref?.();
  }
}
