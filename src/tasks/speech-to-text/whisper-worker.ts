import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { invalidRequest, payloadTooLarge } from '../../errors/service-error.ts';
import { projectFile } from '../../project-files.ts';
import { runBounded } from '../../workers/bounded-process.ts';
import type { WorkerLimits } from '../../workers/isolated-worker.ts';
import { LineWorker, LineWorkerError } from '../../workers/line-worker.ts';
import { makeTempDir } from '../../workers/temp-dirs.ts';

export interface Transcript {
  text: string;
  language: string;
  duration: number;
  segments: { start: number; end: number; text: string }[];
}

const SCRIPT = projectFile('src/tasks/speech-to-text/whisper_worker.py');
const SAMPLE_RATE = 16_000;

/**
 * ffmpeg reads one local file, in one of the audio containers the service accepts (wav, mp3, ogg,
 * flac; webm as matroska, m4a as mov), and nothing it names: no playlists, no other files or URLs.
 */
const ONE_AUDIO_FILE = ['-protocol_whitelist', 'file', '-format_whitelist', 'wav,mp3,ogg,flac,matroska,mov'];

export interface SpeechLimits extends WorkerLimits {
  /** `AUDIO_MAX_SECONDS`: longer audio is refused with 413, and never decoded past the limit. */
  maxSeconds: number;
}

/**
 * Speech to text: ffmpeg decodes the caller's audio here, as any untrusted file is (a bounded
 * process: deadline, prlimit, whitelists), to 16 kHz mono samples; the Python worker
 * (faster-whisper, a LineWorker: its model loads once) transcribes them.
 */
export class WhisperWorker {
  private readonly worker: LineWorker<{ path: string }, Transcript>;

  /** `python` runs whisper_worker.py (the `.venv-stt` one). */
  constructor(python: string, threads: number, private readonly limits: SpeechLimits) {
    this.worker = new LineWorker({ ...limits, name: 'speech-to-text', command: python, args: [SCRIPT], env: { STT_THREADS: String(threads) } });
  }

  /** `param` names the file in errors; `caller` (an API key id) is counted in the queue's share. */
  async transcribe(audio: Buffer, param: string, caller?: string): Promise<Transcript> {
    const dir = await makeTempDir('stt-');
    try {
      const input = join(dir, 'audio');
      await writeFile(input, audio, { mode: 0o600 });
      const samples = join(dir, 'samples');
      await writeFile(samples, await this.decode(input, param), { mode: 0o600 });
      return await this.worker.request({ path: samples }, caller).catch((err: unknown) => {
        if (err instanceof LineWorkerError && err.kind === 'answer') throw invalidRequest(`${param}: ${err.message}`, 'invalid_content', param);
        throw err;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Starts the worker, which loads the Whisper model before it says it is ready. */
  async warm(): Promise<void> {
    await this.worker.hello();
  }

  close(): Promise<void> {
    return this.worker.close();
  }

  /** 16-bit mono samples, never more than a second past `maxSeconds` (a file that declares hours costs no more). */
  private async decode(file: string, param: string): Promise<Buffer> {
    const { maxSeconds } = this.limits;
    const pcm = await runBounded('ffmpeg', [
      '-nostdin', '-hide_banner', '-loglevel', 'error', '-threads', '1', ...ONE_AUDIO_FILE, '-i', file,
      '-t', String(maxSeconds + 1), '-vn', '-sn', '-dn', '-ac', '1', '-ar', String(SAMPLE_RATE), '-f', 's16le', 'pipe:1',
    ], { what: `decoding of ${param}`, limits: this.limits, maxOutputBytes: (maxSeconds + 1) * SAMPLE_RATE * 2 });
    if (pcm.length > maxSeconds * SAMPLE_RATE * 2) {
      throw payloadTooLarge('audio_too_long', `${param}: the audio is longer than ${maxSeconds} s (AUDIO_MAX_SECONDS).`, param);
    }
    return pcm;
  }
}
