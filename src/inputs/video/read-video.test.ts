import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { ServiceError } from '../../errors/service-error.ts';
import { testAttachmentLimits } from '../../testing/attachment-limits.ts';
import { dataUrl, renderTextImage, speech, spokenVideo, type VideoFormat } from '../../testing/fixtures.ts';
import { longVideo } from '../../testing/hostile-inputs.ts';
import { type AttachmentLimits, resolveAttachments } from '../attachments.ts';

const SENTENCE = 'The quick brown fox jumps over the lazy dog.';
const MIME: Record<VideoFormat, string> = { mp4: 'video/mp4', webm: 'video/webm', mov: 'video/quicktime', mkv: 'video/matroska' };
const limits = testAttachmentLimits();
const attach = (filename: string, mime: string, bytes: Buffer, at: AttachmentLimits = limits) =>
  resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename, file_data: dataUrl(mime, bytes) } }] }], at);
const rejects = (status: number, code: string) => (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code;

describe('a video attachment', () => {
  for (const format of ['mp4', 'webm', 'mov', 'mkv'] as const) {
    it(`is read, as ${format}, as its frames in time order and its sound track as 16 kHz WAV`, async () => {
      const read = await attach(`clip.${format}`, MIME[format], await spokenVideo(SENTENCE, ['FIRST SLIDE', 'SECOND SLIDE'], format));
      const frames = read.filter((a) => a.kind === 'image');
      const [audio, ...more] = read.filter((a) => a.kind === 'audio');
      assert.equal(more.length, 0);
      assert.ok(frames.length >= 2, `${frames.length} frames: a slide change is not a repeat`);
      frames.forEach((f, i) => {
        assert.equal(f.param, 'messages[0].content[0]');
        assert.equal(f.frame?.number, i + 1);
        assert.equal(f.mime, 'image/png');
        if (i > 0) assert.ok(f.frame!.seconds > frames[i - 1]!.frame!.seconds);
      });
      assert.equal(audio?.mime, 'audio/wav');
      assert.equal(audio!.bytes.readUInt32LE(24), 16_000);
      assert.equal(audio!.bytes.readUInt32LE(40), audio!.bytes.length - 44);
      assert.ok(audio!.bytes.length > 2 * 16_000 * 2, 'over two seconds of sound');
    });
  }

  it('is fetched from a URL through the safe fetcher and read the same way', async () => {
    const video = await spokenVideo(SENTENCE, ['FETCHED'], 'webm');
    const server = createServer((_, res) => res.writeHead(200, { 'Content-Type': 'video/webm' }).end(video));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/talk.webm`;
      const read = await resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename: 'talk.webm', file_data: url } }] }], limits);
      assert.deepEqual(read.map((a) => a.kind).sort(), ['audio', 'image']);
    } finally {
      server.close();
    }
  });

  it('takes at most VIDEO_MAX_FRAMES frames, and none that repeats the one before', async () => {
    const slides = ['ONE', 'TWO', 'THREE', 'FOUR', 'FIVE', 'SIX'];
    const video = await spokenVideo('', slides, 'mp4');
    const two = await attach('clip.mp4', 'video/mp4', video, testAttachmentLimits({ video: { ...limits.video, maxFrames: 2 } }));
    assert.equal(two.length, 2);
    const still = await attach('still.mp4', 'video/mp4', await spokenVideo('', ['ONE'], 'mp4'));
    assert.deepEqual(still.map((a) => [a.kind, a.frame?.number]), [['image', 1]], 'a still picture, no sound: one frame');
  });

  it('is read as audio when its container holds sound only, however it is declared', async () => {
    const webm = speech(SENTENCE, 'webm');
    for (const mime of ['audio/webm', 'video/webm']) {
      const read = await attach('voice.webm', mime, webm);
      assert.deepEqual(read.map((a) => [a.kind, a.bytes.equals(webm)]), [['audio', true]], mime);
    }
  });

  it('finds the length of a recording whose header does not say it (as a browser records)', async () => {
    const video = await spokenVideo(SENTENCE, ['LIVE'], 'webm');
    const live = execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', 'pipe:0', '-c', 'copy', '-live', '1', '-f', 'webm', 'pipe:1'], { input: video });
    const read = await attach('live.webm', 'video/webm', live);
    assert.deepEqual(read.map((a) => a.kind).sort(), ['audio', 'image']);
    await assert.rejects(attach('live.webm', 'video/webm', live, testAttachmentLimits({ video: { ...limits.video, maxSeconds: 1 } })),
      rejects(413, 'video_too_long'));
  });

  it('refuses a 2-hour video with 413 video_too_long, naming the limit, before decoding a frame', async () => {
    const started = process.cpuUsage();
    await assert.rejects(attach('long.mp4', 'video/mp4', longVideo(7200)), (e: unknown) =>
      rejects(413, 'video_too_long')(e) && /7200 s, over the limit of 900 s \(VIDEO_MAX_SECONDS\)/.test((e as Error).message));
    assert.ok(process.cpuUsage(started).user < 5e6, 'no decoding in this process');
  });

  it('refuses a picture size over IMAGE_MAX_PIXELS with 413 video_too_large', async () => {
    const video = await spokenVideo('', ['BIG'], 'mkv');
    await assert.rejects(attach('big.mkv', 'video/matroska', video, testAttachmentLimits({ video: { ...limits.video, maxPixels: 100_000 } })),
      rejects(413, 'video_too_large'));
  });

  it('refuses with 400 a video whose bytes are something else, and a playlist named .mp4', async () => {
    const png = await renderTextImage(['not a video']);
    await assert.rejects(attach('clip.mp4', 'video/mp4', png), rejects(400, 'invalid_content'));
    const playlist = Buffer.from('#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n');
    await assert.rejects(attach('clip.mp4', 'video/mp4', playlist), rejects(400, 'invalid_content'));
    const mp4 = await spokenVideo('', ['X'], 'mp4');
    await assert.rejects(attach('clip.webm', 'video/webm', mp4), rejects(400, 'invalid_content'));
  });
});
