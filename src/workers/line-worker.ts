import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface LineWorkerOptions {
  /** Shown in errors: "the text guard". */
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** A request still unanswered after this ends the worker; the next request starts it anew. */
  timeoutMs: number;
}

/** Why a line worker failed a request: it could not start, it stopped, it overran, or it said so. */
export class LineWorkerError extends Error {
  constructor(message: string, readonly kind: 'start' | 'stopped' | 'timeout' | 'answer') {
    super(message);
  }
}

interface Running {
  process: ChildProcessWithoutNullStreams;
  lines: AsyncIterator<string>;
  /** The worker's first line, which says it is ready (and whatever else it wants known). */
  hello: Record<string, unknown>;
}

/**
 * A long-lived child (a Python model server) that reads one JSON request per line on stdin and
 * writes one JSON answer per line on stdout, after a first line `{"ready": true, ...}`. Started on
 * first use, so its model loads once; one request at a time; killed past the deadline or when it
 * dies, and started again by the next request.
 */
export class LineWorker<Request, Answer> {
  private running: Promise<Running> | undefined;
  private current: ChildProcessWithoutNullStreams | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: LineWorkerOptions) {}

  /** The worker's first line (starting it if needed). */
  async hello(): Promise<Record<string, unknown>> {
    return (await this.start()).hello;
  }

  request(request: Request): Promise<Answer> {
    const run = this.queue.then(() => this.run(request));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (running) (await running.catch(() => undefined))?.process.kill();
  }

  private start(): Promise<Running> {
    this.running ??= this.spawn().catch((err: Error) => {
      this.running = undefined;
      throw new LineWorkerError(`${this.options.name} could not start: ${err.message}`, 'start');
    });
    return this.running;
  }

  private async spawn(): Promise<Running> {
    const { command, args, env } = this.options;
    const child = spawn(command, args, { env: { ...process.env, ...env } });
    this.current = child;
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-2000)));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const running: Running = { process: child, lines, hello: {} };
    child.on('exit', () => this.forget(child));
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    await spawned;
    const first = await lines.next();
    const hello = first.done ? undefined : (JSON.parse(first.value) as Record<string, unknown>);
    if (!hello?.ready) throw new Error(stderr.trim().split('\n').at(-1) || 'it stopped before it was ready');
    running.hello = hello;
    return running;
  }

  /** A worker that died or was killed: the next request starts a new one. */
  private forget(child: ChildProcessWithoutNullStreams): void {
    if (this.current === child) {
      this.current = undefined;
      this.running = undefined;
    }
  }

  private async run(request: Request): Promise<Answer> {
    const worker = await this.start();
    worker.process.stdin.write(`${JSON.stringify(request)}\n`);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.forget(worker.process);
        worker.process.kill('SIGKILL');
        reject(new LineWorkerError(`${this.options.name} took longer than ${this.options.timeoutMs} ms and was stopped`, 'timeout'));
      }, this.options.timeoutMs);
    });
    try {
      const line = await Promise.race([worker.lines.next(), deadline]);
      if (line.done) {
        this.forget(worker.process);
        throw new LineWorkerError(`${this.options.name} stopped`, 'stopped');
      }
      const answer = JSON.parse(line.value) as Answer | { error: string };
      if (answer && typeof answer === 'object' && 'error' in answer) throw new LineWorkerError(answer.error, 'answer');
      return answer as Answer;
    } finally {
      clearTimeout(timer);
    }
  }
}
