import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { invalidRequest, ServiceError } from '../../http/errors.ts';

export interface Transcript {
  text: string;
  language: string;
  duration: number;
  segments: { start: number; end: number; text: string }[];
}

const SCRIPT = fileURLToPath(new URL('./whisper_worker.py', import.meta.url));

/**
 * The Python worker (faster-whisper) as a long-lived child: started on first use, fed one audio
 * file at a time over stdin, answering one JSON line each. If it dies, the next call starts it anew.
 */
export class WhisperWorker {
  private child: Promise<{ process: ChildProcessWithoutNullStreams; lines: AsyncIterator<string> }> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly python: string, private readonly threads: number) {}

  transcribe(audio: Buffer, param: string): Promise<Transcript> {
    const run = this.queue.then(() => this.run(audio, param));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.child) (await this.child).process.kill();
  }

  private start() {
    const process = spawn(this.python, [SCRIPT], { env: { ...globalThis.process.env, STT_THREADS: String(this.threads) } });
    process.stderr.resume(); // its warnings are not answers
    process.on('exit', () => (this.child = undefined));
    const lines = createInterface({ input: process.stdout })[Symbol.asyncIterator]();
    return lines.next().then((first) => {
      if (first.done || !JSON.parse(first.value).ready) throw new Error('the speech-to-text worker did not start');
      return { process, lines };
    });
  }

  private async run(audio: Buffer, param: string): Promise<Transcript> {
    const dir = await mkdtemp(join(tmpdir(), 'stt-'));
    try {
      const path = join(dir, 'audio');
      await writeFile(path, audio);
      const worker = await (this.child ??= this.start().catch((err: Error) => {
        this.child = undefined;
        throw new ServiceError(500, 'internal_error', 'stt_unavailable', `Speech-to-text could not start: ${err.message}`);
      }));
      worker.process.stdin.write(`${JSON.stringify({ path })}\n`);
      const line = await worker.lines.next();
      if (line.done) throw new ServiceError(500, 'internal_error', 'stt_failed', 'The speech-to-text worker stopped.');
      const answer = JSON.parse(line.value) as Transcript | { error: string };
      if ('error' in answer) throw invalidRequest(`${param}: ${answer.error}`, 'invalid_content', param);
      return answer;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
