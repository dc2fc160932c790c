import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkerLimits } from '../../workers/isolated-worker.ts';
import { makeTempDir } from '../../workers/temp-dirs.ts';

/** Bounds on the work one video may cause. */
export interface VideoLimits extends WorkerLimits {
  /** `VIDEO_MAX_SECONDS`: a longer video is refused (413); no step reads past it either. */
  maxSeconds: number;
  /** `VIDEO_MAX_FRAMES`: frames sampled for OCR and object detection. */
  maxFrames: number;
  /** `IMAGE_MAX_PIXELS`: a larger picture size is refused (413) before any frame is decoded. */
  maxPixels: number;
}

/**
 * ffmpeg reads one local file, of the containers the service accepts, and nothing it names
 * (no playlists, no references to other files or URLs). `mov` covers mp4, `matroska` covers webm.
 */
export const ONE_LOCAL_FILE = ['-protocol_whitelist', 'file', '-format_whitelist', 'mov,matroska'];

/**
 * The caller's video as a file in a private directory (0700), removed once `use` is done, zdr or
 * not: an mp4 or mov often keeps its index at the end, which ffmpeg cannot seek back to in a pipe.
 * A crashed run's are removed at the next start (temp-dirs.ts).
 */
export async function withVideoFile<T>(bytes: Buffer, use: (file: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await makeTempDir('service-video-');
  try {
    const file = join(dir, 'input');
    await writeFile(file, bytes, { mode: 0o600 });
    return await use(file, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
