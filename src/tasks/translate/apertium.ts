import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runBounded } from '../../workers/bounded-process.ts';
import type { WorkerLimits } from '../../workers/isolated-worker.ts';
import { JobQueue } from '../../workers/job-queue.ts';
import { taskTimedOut } from '../../errors/task-errors.ts';

const run = promisify(execFile);

/** Apertium names languages with ISO 639-3 or 639-1 codes; the contract speaks 639-1. */
const TO_ISO1: Record<string, string> = {
  eng: 'en', spa: 'es', cat: 'ca', fra: 'fr', glg: 'gl', por: 'pt', epo: 'eo', eus: 'eu', hbs: 'sh', isl: 'is', mkd: 'mk', ita: 'it', oci: 'oc',
};
const iso1 = (code: string) => TO_ISO1[code] ?? code;

export interface Route {
  /** The apertium modes run in turn (two when pivoting through another language). */
  modes: string[];
}

/** Most bytes a translation may come to (the text is bounded by the request's size; this is far above it). */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/**
 * Rule-based translation by Debian's apertium, one bounded process per mode (`-u`: unknown words
 * are left as they are, unmarked), one translation at a time in a queue shared fairly between
 * callers, its deadline counted from when it was queued. Pairs are the installed modes; a missing
 * pair pivots through Spanish or English where both legs exist.
 */
export class Apertium {
  private pairs: Promise<Map<string, string>> | undefined;
  private readonly queue: JobQueue;

  constructor(private readonly limits: WorkerLimits) {
    this.queue = new JobQueue('translation', limits, () => taskTimedOut('translation', limits.timeoutMs));
  }

  /** `from-to` (ISO 639-1) → mode name, for plain modes (no variants such as `_valencia`). */
  async supportedPairs(): Promise<Map<string, string>> {
    this.pairs ??= run('apertium', ['-l'], { timeout: 10_000 }).then(({ stdout }) => {
      const pairs = new Map<string, string>();
      for (const mode of stdout.split(/\s+/)) {
        const match = /^([a-z]{2,3})-([a-z]{2,3})$/.exec(mode);
        if (match) pairs.set(`${iso1(match[1]!)}-${iso1(match[2]!)}`, mode);
      }
      return pairs;
    }, () => new Map<string, string>());
    return this.pairs;
  }

  async route(from: string, to: string): Promise<Route | undefined> {
    const pairs = await this.supportedPairs();
    const direct = pairs.get(`${from}-${to}`);
    if (direct) return { modes: [direct] };
    for (const pivot of ['es', 'en']) {
      const first = pairs.get(`${from}-${pivot}`);
      const second = pairs.get(`${pivot}-${to}`);
      if (first && second) return { modes: [first, second] };
    }
    return undefined;
  }

  /** `caller` (an API key id) is counted in the queue's share. */
  translate(text: string, route: Route, caller?: string): Promise<string> {
    return this.queue.add(caller, async (signal) => {
      let current = text;
      for (const mode of route.modes) {
        // apertium reads standard input only from a pipe, and Node hands a child a socket: `cat` bridges.
        const out = await runBounded('bash', ['-c', 'cat | apertium -u "$1"', 'apertium', mode], {
          what: `apertium ${mode} translation`, input: Buffer.from(current), limits: this.limits, maxOutputBytes: MAX_OUTPUT_BYTES,
          signal, blame: 'service',
        });
        current = out.toString().split('\n').map((l) => l.trim()).join('\n').trim();
      }
      return current;
    });
  }
}
