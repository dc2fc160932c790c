import { projectFile } from '../../project-files.ts';
import type { QueueLimits } from '../../workers/job-queue.ts';
import { LineWorker } from '../../workers/line-worker.ts';

const SCRIPT = projectFile('src/guard/text/guard_worker.py');

/** A question as the semantic cache compares it. */
export interface Reading {
  /** The sentence's unit vector: near vectors (cosine) mean near meanings. */
  vector: Float32Array;
  /** Its word pieces' unit vectors, end to end (token-alignment.ts). */
  pieces: Float32Array;
}

export interface Embedder {
  /** `caller` (an API key id) is counted in the worker queue's share. */
  embed(text: string, caller?: string): Promise<Reading>;
  /** The budget judge's cross-encoder: its logit for two questions read together, `a` first (with a judge only). */
  crossLogit?(a: string, b: string, caller?: string): Promise<number>;
  close?(): Promise<void>;
}

export interface MiniLmEmbedderOptions extends QueueLimits {
  /** The Python of the guard's environment (`.venv-guard`), which holds the encoder. */
  python: string;
  threads: number;
  timeoutMs: number;
  /** The budget judge's folder (`CACHE_JUDGE=budget`): the worker then also reads pairs with its cross-encoder. */
  judgeDir?: string;
}

/**
 * The semantic cache's sentence encoder (all-MiniLM-L6-v2, int8 ONNX; the guard reads with MPNet)
 * in its own worker (`guard_worker.py embed`): the semantic cache's lookups never wait behind the
 * guard's batches.
 */
export class MiniLmEmbedder implements Embedder {
  private readonly worker: LineWorker<{ texts: string[] } | { pairs: [string, string][] }, { vectors: number[][]; pieces: string[]; logits: number[] }>;

  constructor(options: MiniLmEmbedderOptions) {
    this.worker = new LineWorker({
      name: 'the semantic cache\'s encoder', command: options.python, args: [SCRIPT, 'embed', ...(options.judgeDir ? [options.judgeDir] : [])],
      env: { GUARD_THREADS: String(options.threads) }, timeoutMs: options.timeoutMs, maxQueued: options.maxQueued, perCaller: options.perCaller,
    });
  }

  async embed(text: string, caller?: string): Promise<Reading> {
    const { vectors, pieces } = await this.worker.request({ texts: [text] }, caller);
    return { vector: Float32Array.from(vectors[0]!), pieces: decodeVector(pieces[0]!) };
  }

  async crossLogit(a: string, b: string, caller?: string): Promise<number> {
    const { logits } = await this.worker.request({ pairs: [[a, b]] }, caller);
    return logits[0]!;
  }

  warm(): Promise<unknown> {
    return this.worker.hello();
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

/** The cosine of two unit vectors. */
export function similarity(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

/** A vector (or several end to end) as the store keeps it: Float32 little-endian bytes, base64. */
export const encodeVector = (vector: Float32Array) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');

export function decodeVector(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}
