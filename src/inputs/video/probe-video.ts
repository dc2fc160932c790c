import { invalidRequest, payloadTooLarge } from '../../errors/service-error.ts';
import { runBounded } from '../../workers/bounded-process.ts';
import { ONE_LOCAL_FILE, type VideoLimits } from './video-file.ts';

export interface VideoInfo {
  /** Seconds, from the container or, where it has none (a browser recording), from its packets. */
  duration: number;
  width: number;
  height: number;
  hasVideo: boolean;
  hasAudio: boolean;
}

interface Probed {
  format?: { duration?: string };
  streams?: { codec_type?: string; width?: number; height?: number; disposition?: { attached_pic?: number } }[];
}

/** What the file holds, read by ffprobe without decoding a frame; 413 when it is too long or too large. */
export async function probeVideo(file: string, param: string, limits: VideoLimits): Promise<VideoInfo> {
  const probed = JSON.parse((await ffprobe(file, limits, [
    '-show_entries', 'format=duration:stream=codec_type,width,height:stream_disposition=attached_pic', '-of', 'json',
  ])).toString()) as Probed;
  const streams = probed.streams ?? [];
  // A cover picture in an audio file is a "video" stream too; only a moving picture counts.
  const picture = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const info: VideoInfo = {
    duration: Number(probed.format?.duration) || (await lastPacketEnd(file, limits)),
    width: picture?.width ?? 0,
    height: picture?.height ?? 0,
    hasVideo: picture !== undefined,
    hasAudio: streams.some((s) => s.codec_type === 'audio'),
  };
  if (!info.hasVideo && !info.hasAudio) throw invalidRequest(`${param} holds neither a picture nor a sound track.`, 'invalid_content', param);
  if (info.duration > limits.maxSeconds) {
    throw payloadTooLarge('video_too_long',
      `${param} lasts ${Math.round(info.duration)} s, over the limit of ${limits.maxSeconds} s (VIDEO_MAX_SECONDS).`, param);
  }
  if (info.width * info.height > limits.maxPixels) {
    throw payloadTooLarge('video_too_large',
      `${param} is ${info.width}×${info.height} pixels, over the limit of ${limits.maxPixels} pixels (IMAGE_MAX_PIXELS).`, param);
  }
  return info;
}

/** The end of the last packet: the duration of a file whose header does not say it. */
async function lastPacketEnd(file: string, limits: VideoLimits): Promise<number> {
  const lines = (await ffprobe(file, limits, ['-show_entries', 'packet=pts_time,duration_time', '-of', 'csv=p=0'])).toString().split('\n');
  let end = 0;
  for (const line of lines) {
    const [pts, duration] = line.split(',').map(Number);
    if (Number.isFinite(pts)) end = Math.max(end, pts! + (Number.isFinite(duration) ? duration! : 0));
  }
  return end;
}

function ffprobe(file: string, limits: VideoLimits, show: string[]): Promise<Buffer> {
  return runBounded('ffprobe', ['-v', 'error', ...ONE_LOCAL_FILE, ...show, file], {
    what: 'video probe', limits, maxOutputBytes: 32 * 1024 * 1024,
  });
}
