import { runBounded } from '../../workers/bounded-process.ts';
import { ONE_LOCAL_FILE, type VideoLimits } from './video-file.ts';

const SAMPLE_RATE = 16_000;

/** The first sound track, as the mono 16 kHz WAV speech-to-text reads, never past `maxSeconds`. */
export async function audioTrack(file: string, limits: VideoLimits): Promise<Buffer> {
  const pcm = await runBounded('ffmpeg', [
    '-nostdin', '-hide_banner', '-loglevel', 'error', '-threads', '1', ...ONE_LOCAL_FILE, '-t', String(limits.maxSeconds), '-i', file,
    '-map', '0:a:0', '-vn', '-sn', '-dn', '-ac', '1', '-ar', String(SAMPLE_RATE), '-f', 's16le', 'pipe:1',
  ], { what: 'video sound extraction', limits, maxOutputBytes: (limits.maxSeconds + 1) * SAMPLE_RATE * 2 });
  return Buffer.concat([wavHeader(pcm.length), pcm]);
}

/** ffmpeg cannot finish a WAV header in a pipe (it would seek back to write the sizes), so it is written here. */
function wavHeader(dataBytes: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16); // fmt chunk size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE * 2, 28); // bytes per second
  header.writeUInt16LE(2, 32); // block align
  header.writeUInt16LE(16, 34); // bits per sample
  header.write('data', 36);
  header.writeUInt32LE(dataBytes, 40);
  return header;
}
