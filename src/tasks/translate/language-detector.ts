import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { detectLanguage } from './language-detector.worker.ts';

/** How much of a text is read to tell its language: more says nothing new, and crosses to the worker for nothing. */
const SAMPLE_CHARS = 10_000;

/**
 * The source language of a text without one named (eld's large n-gram tables), told in a worker
 * process of its own. Those tables are 133 MB of JavaScript objects: in the serving process they
 * made every full collection of its heap mark them, on every request's account, translation or
 * not (the heap was 174 MB, 41 MB without them; README, gateway). The worker starts, and loads
 * them, when the tasks warm up.
 */
export class LanguageDetector {
  private readonly worker: IsolatedWorker<{ detectLanguage: typeof detectLanguage }>;

  constructor(limits: WorkerLimits) {
    this.worker = new IsolatedWorker(new URL('./language-detector.worker.ts', import.meta.url), 'language detection', limits);
  }

  /** ISO 639-1, or undefined when the text says too little; `caller` (an API key id) is counted in the queue's share. */
  async detect(text: string, caller?: string): Promise<string | undefined> {
    return (await this.worker.runFor(caller, 'detectLanguage', text.slice(0, SAMPLE_CHARS))) || undefined;
  }

  /** Starts the worker and loads the tables in it. */
  async warm(): Promise<void> {
    await this.worker.run('detectLanguage', 'warm');
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
