import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';
import { ServiceError } from '../../errors/service-error.ts';
import { dataUrl, speech, spokenVideo, wordErrorRate } from '../../testing/fixtures.ts';
import { resolveAttachments } from '../../inputs/attachments.ts';
import { testAttachmentLimits } from '../../testing/attachment-limits.ts';
import { taskInput } from '../../testing/task-input.ts';
import { createSpeechToTextTask } from './speech-to-text-task.ts';
import { WhisperWorker } from './whisper-worker.ts';
import { speechLimitsOf } from '../../wiring/create-tasks.ts';

const SENTENCES = 'The quick brown fox jumps over the lazy dog. Please call me at noon tomorrow. Open the settings and click save.';
const MIME = { wav: 'audio/wav', mp3: 'audio/mpeg', ogg: 'audio/ogg', webm: 'audio/webm' } as const;
const config = loadConfig({ ...process.env, AUDIO_MAX_SECONDS: '20' });
const worker = new WhisperWorker(config.sttPython, 2, speechLimitsOf(config));
const task = createSpeechToTextTask(worker);

describe('speech_to_text task (faster-whisper tiny.en)', () => {
  after(() => worker.close());

  for (const format of ['wav', 'mp3', 'ogg', 'webm'] as const) {
    it(`transcribes espeak-ng speech in ${format} with a word error rate under 15%`, async () => {
      const entry = await task.run(taskInput({ attachments: [{ kind: 'audio', mime: MIME[format], bytes: speech(SENTENCES, format), param: `a.${format}` }] }));
      if (entry.name !== 'stt') return assert.fail('not an stt entry');
      const wer = wordErrorRate(SENTENCES, entry.result.text);
      assert.ok(wer < 0.15, `WER ${wer}: ${entry.result.text}`);
      assert.equal(entry.result.language, 'en');
      assert.ok(entry.result.duration_seconds > 3);
      const segments = entry.result.segments;
      assert.ok(segments.length >= 1);
      segments.forEach((s, i) => {
        assert.ok(s.start < s.end && s.end <= entry.result.duration_seconds + 0.5, JSON.stringify(s));
        if (i > 0) assert.ok(s.start >= segments[i - 1]!.start);
        assert.equal(s.source, `a.${format}`);
      });
    });
  }

  for (const format of ['mp4', 'webm'] as const) {
    it(`transcribes the sound track of a ${format} video with a word error rate under 20%, timed in the video`, async () => {
      const video = await spokenVideo(SENTENCES, ['Slide one', 'Slide two'], format);
      const attachments = await resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename: `talk.${format}`, file_data: dataUrl(`video/${format}`, video) } }] }],
        testAttachmentLimits({ video: { ...testAttachmentLimits().video, maxSeconds: 20 } }));
      const entry = await task.run(taskInput({ attachments }));
      if (entry.name !== 'stt') return assert.fail('not an stt entry');
      const wer = wordErrorRate(SENTENCES, entry.result.text);
      assert.ok(wer < 0.2, `WER ${wer}: ${entry.result.text}`);
      assert.ok(entry.result.segments.every((s) => s.source === 'messages[0].content[0]' && s.end <= entry.result.duration_seconds + 0.5));
    });
  }

  it('answers 400 for audio that cannot be decoded', async () => {
    await assert.rejects(task.run(taskInput({ attachments: [{ kind: 'audio', mime: 'audio/wav', bytes: Buffer.from('RIFF....WAVEjunk'), param: 'bad.wav' }] })),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && /bad\.wav/.test(e.message));
  });

  it('decodes only the audio containers the service accepts: a Sun AU file ffmpeg could read is answered 400, not transcribed', async () => {
    const au = execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'wav', '-i', 'pipe:0', '-f', 'au', 'pipe:1'], { input: speech(SENTENCES, 'wav') });
    await assert.rejects(task.run(taskInput({ attachments: [{ kind: 'audio', mime: 'audio/wav', bytes: au, param: 'sound.wav' }] })),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && /sound\.wav/.test(e.message));
  });

  it('refuses audio longer than AUDIO_MAX_SECONDS with 413 audio_too_long, without transcribing it', async () => {
    const long = speech(Array.from({ length: 6 }, () => SENTENCES).join(' '), 'ogg');
    await assert.rejects(task.run(taskInput({ attachments: [{ kind: 'audio', mime: 'audio/ogg', bytes: long, param: 'long.ogg' }] })),
      (e: unknown) => e instanceof ServiceError && e.status === 413 && e.code === 'audio_too_long' && /AUDIO_MAX_SECONDS/.test(e.message));
  });
});
