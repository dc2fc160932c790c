import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { runBounded } from '../../workers/bounded-process.ts';
import type { VideoInfo } from './probe-video.ts';
import { ONE_LOCAL_FILE, type VideoLimits } from './video-file.ts';

export interface Frame {
  /** Where in the video it was taken. */
  seconds: number;
  png: Buffer;
}

/** Frames wider or taller than this are scaled down: enough for OCR of screen text, not more. */
const MAX_SIDE = 1920;

/**
 * Up to `maxFrames` frames, evenly spaced (the middle of each equal slice of the video), without
 * the frames that merely repeat the one before (a static slide, a paused screen). One ffmpeg run
 * seeks to each time and decodes only from the keyframe before it, so the cost follows the number
 * of frames, not the length of the video.
 */
export async function sampleFrames(file: string, dir: string, info: VideoInfo, limits: VideoLimits): Promise<Frame[]> {
  const count = Math.max(1, Math.min(limits.maxFrames, Math.ceil(info.duration)));
  const times = Array.from({ length: count }, (_, i) => round(((i + 0.5) * info.duration) / count));
  const inputs = times.flatMap((t) => ['-ss', String(t), ...ONE_LOCAL_FILE, '-max_pixels', String(limits.maxPixels), '-threads', '1', '-i', file]);
  const scale = `scale='min(iw,${MAX_SIDE})':'min(ih,${MAX_SIDE})':force_original_aspect_ratio=decrease`;
  const outputs = times.flatMap((_, i) => ['-map', `${i}:V:0`, '-frames:v', '1', '-vf', scale, '-threads', '1', '-update', '1', join(dir, `frame-${i}.png`)]);
  await runBounded('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', ...inputs, '-filter_threads', '1', ...outputs], {
    what: 'video frame sampling', limits, maxOutputBytes: 1024 * 1024,
  });
  const frames: Frame[] = [];
  for (const [i, seconds] of times.entries()) {
    const png = await readFile(join(dir, `frame-${i}.png`)).catch(() => undefined); // a seek past the last frame yields none
    if (png && !(frames.length > 0 && (await sameImage(frames.at(-1)!.png, png)))) frames.push({ seconds, png });
  }
  return frames;
}

const round = (seconds: number) => Math.round(seconds * 100) / 100;

/**
 * Two frames alike but for noise: on a 128×128 grey thumbnail, fewer than 0.1% of the pixels
 * changed by more than a fifth of the brightness range (a new line of text on a slide is more).
 */
async function sameImage(a: Buffer, b: Buffer): Promise<boolean> {
  const thumb = (png: Buffer) => sharp(png).greyscale().resize(128, 128, { fit: 'fill' }).raw().toBuffer();
  const [x, y] = await Promise.all([thumb(a), thumb(b)]);
  let changed = 0;
  for (let i = 0; i < x.length; i++) if (Math.abs(x[i]! - y[i]!) > 51) changed++;
  return changed < x.length * 0.001;
}
