import { createInterface } from 'node:readline';
import { ServiceError } from '../errors/service-error.ts';
import type { Child } from './child.ts';
import type { QueueLimits } from './job-queue.ts';
import { Supervisor } from './supervisor.ts';
import { engineAnswered, taskFailed, taskTimedOut } from '../errors/task-errors.ts';

export interface LineWorkerOptions extends QueueLimits {
  /** Shown in errors: "the text guard". */
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** A request still unanswered this long after it was queued ends the worker; the next request starts it anew. */
  timeoutMs: number;
}

/**
 * Why a line worker failed a request: it could not start, it stopped, it overran (a 503 like any
 * task's), or it answered `{"error": ...}` (`answer` holds that whole line, for the caller to read).
 */
export class LineWorkerError extends ServiceError {
  constructor(base: ServiceError, readonly kind: 'start' | 'stopped' | 'timeout' | 'answer', readonly answer: Record<string, unknown> = {}) {
    super(base.status, base.type, base.code, base.message, base.param, base.headers);
    this.name = 'LineWorkerError';
  }
}

interface Session {
  lines: AsyncIterator<string>;
  /** The worker's first line, which says it is ready (and whatever else it wants known). */
  hello: Record<string, unknown>;
}

/**
 * A long-lived child (a Python model server) that reads one JSON request per line on stdin and
 * writes one JSON answer per line on stdout, after a first line `{"ready": true, ...}`. The
 * Supervisor starts it on first use (so its model loads once), queues the requests and ends it
 * past a deadline or when it dies; this is the protocol.
 */
export class LineWorker<Request, Answer> {
  private readonly supervisor: Supervisor<Session>;

  constructor(options: LineWorkerOptions) {
    const { name } = options;
    this.supervisor = new Supervisor<Session>({
      what: name, limits: options,
      child: { command: options.command, args: options.args, env: options.env },
      ready: async (child) => {
        const lines = createInterface({ input: child.process.stdout })[Symbol.asyncIterator]();
        const first = await lines.next();
        const hello = first.done ? undefined : (JSON.parse(first.value) as Record<string, unknown>);
        if (!hello?.ready) throw new Error(child.lastStderrLine('it stopped before it was ready'));
        return { lines, hello };
      },
      failures: {
        start: (why) => new LineWorkerError(taskFailed(name, `it could not start: ${why}`), 'start'),
        exit: () => new LineWorkerError(taskFailed(name, 'it stopped'), 'stopped'),
        timeout: () => new LineWorkerError(taskTimedOut(name, options.timeoutMs), 'timeout'),
      },
    });
  }

  /** The worker's first line (starting it if needed). */
  async hello(): Promise<Record<string, unknown>> {
    return (await this.supervisor.warm()).hello;
  }

  /** Queues `request`, counted against `caller`'s share (an API key id, where known). */
  request(request: Request, caller?: string): Promise<Answer> {
    return this.supervisor.run(caller, (session, child) => this.exchange(session, child, request));
  }

  close(): Promise<void> {
    return this.supervisor.close();
  }

  private async exchange(session: Session, child: Child, request: Request): Promise<Answer> {
    child.process.stdin.write(`${JSON.stringify(request)}\n`);
    const line = await session.lines.next();
    if (line.done) {
      child.kill(); // its output ended: whatever is left of it is of no use
      throw new LineWorkerError(taskFailed(this.supervisor.what, 'it stopped'), 'stopped');
    }
    const answer = JSON.parse(line.value) as Answer | { error: string };
    if (answer && typeof answer === 'object' && 'error' in answer) {
      throw new LineWorkerError(engineAnswered(answer.error), 'answer', answer);
    }
    return answer as Answer;
  }
}
