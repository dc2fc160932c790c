import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { invalidRequest, ServiceError } from '../../errors/service-error.ts';
import { taskTimedOut } from '../../workers/task-errors.ts';
import { makeTempDir } from '../../workers/temp-dirs.ts';

export interface Transcript {
  text: string;
  language: string;
  duration: number;
  segments: { start: number; end: number; text: string }[];
}

const SCRIPT = fileURLToPath(new URL('./whisper_worker.py', import.meta.url));

export interface SpeechLimits {
  /** `TASK_TIMEOUT_MS`: a transcription still running after this ends the worker. */
  timeoutMs: number;
  /** `AUDIO_MAX_SECONDS`: longer audio is refused with 413, and never decoded past the limit. */
  maxSeconds: number;
}

/**
 * The Python worker (faster-whisper) as a long-lived child: started on first use, fed one audio
 * file at a time over stdin, answering one JSON line each. If it dies or overruns its deadline,
 * it is ended and the next call starts it anew.
 */
export class WhisperWorker {
  private child: Promise<{ process: ChildProcessWithoutNullStreams; lines: AsyncIterator<string> }> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly python: string, private readonly threads: number, private readonly limits: SpeechLimits) {}

  transcribe(audio: Buffer, param: string): Promise<Transcript> {
    const run = this.queue.then(() => this.run(audio, param));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Starts the worker, which loads the Whisper model before it says it is ready. */
  async warm(): Promise<void> {
    await (this.child ??= this.start().catch((err: Error) => {
      this.child = undefined;
      throw err;
    }));
  }

  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child) (await child).process.kill();
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
    const dir = await makeTempDir('stt-');
    try {
      const path = join(dir, 'audio');
      await writeFile(path, audio);
      const worker = await (this.child ??= this.start().catch((err: Error) => {
        this.child = undefined;
        throw new ServiceError(500, 'internal_error', 'stt_unavailable', `Speech-to-text could not start: ${err.message}`);
      }));
      worker.process.stdin.write(`${JSON.stringify({ path, max_seconds: this.limits.maxSeconds })}\n`);
      const line = await this.withDeadline(worker.lines.next(), worker.process);
      if (line.done) throw new ServiceError(500, 'internal_error', 'stt_failed', 'The speech-to-text worker stopped.');
      const answer = JSON.parse(line.value) as Transcript | { error: string; too_long?: boolean };
      if ('error' in answer) {
        if (answer.too_long) throw new ServiceError(413, 'payload_too_large', 'audio_too_long', `${param}: ${answer.error}.`, param);
        throw invalidRequest(`${param}: ${answer.error}`, 'invalid_content', param);
      }
      return answer;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Past the deadline the worker is killed (its exit clears it) and the call gets a 503. */
  private async withDeadline<T>(answer: Promise<T>, process: ChildProcessWithoutNullStreams): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        process.kill('SIGKILL');
        reject(taskTimedOut('speech-to-text', this.limits.timeoutMs));
      }, this.limits.timeoutMs);
    });
    try {
      return await Promise.race([answer, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}
