import type { ResolvedAttachment } from '../attachment-types.ts';
import { audioTrack } from './audio-track.ts';
import { probeVideo } from './probe-video.ts';
import { sampleFrames } from './sample-frames.ts';
import { type VideoLimits, withVideoFile } from './video-file.ts';

export type { VideoLimits };

/**
 * A video becomes what the tasks already read: its sampled frames (images, each with its time)
 * and its sound track (a WAV), all under the video's own `param`. A file in a video container
 * with no picture (an audio-only webm or mp4) is simply audio.
 */
export function readVideo(video: Omit<ResolvedAttachment, 'kind'>, limits: VideoLimits): Promise<ResolvedAttachment[]> {
  return withVideoFile(video.bytes, async (file, dir) => {
    const info = await probeVideo(file, video.param, limits);
    if (!info.hasVideo) return [{ ...video, kind: 'audio' }];
    // Where each piece came from: the video's part, its file name, and the digest of the video sent.
    const { param, filename, sent } = video;
    const origin = { param, sent, ...(filename ? { filename } : {}) };
    const read: ResolvedAttachment[] = (await sampleFrames(file, dir, info, limits)).map(({ seconds, png }, i) => (
      { kind: 'image', mime: 'image/png', bytes: png, frame: { number: i + 1, seconds }, ...origin }));
    if (info.hasAudio) read.push({ kind: 'audio', mime: 'audio/wav', bytes: await audioTrack(file, limits), ...origin });
    return read;
  });
}
