import { attachmentsFor, type Task } from '../task.ts';
import type { WhisperWorker } from './whisper-worker.ts';

/** Transcripts with timestamped segments for each attached audio file (precontext name `stt`). */
export function createSpeechToTextTask(worker: WhisperWorker): Task {
  return {
    name: 'speech_to_text',
    async run(input) {
      const audio = attachmentsFor('speech_to_text', input, ['audio'], 'an audio file or a video with sound');
      const segments = [];
      const texts = [];
      let duration = 0;
      let language = 'en';
      for (const file of audio) {
        const transcript = await worker.transcribe(file.bytes, file.param, input.caller);
        segments.push(...transcript.segments.map((s) => ({ source: file.param, ...s })));
        texts.push(transcript.text);
        duration += transcript.duration;
        language = transcript.language;
      }
      return { name: 'stt', result: { text: texts.join('\n'), language, duration_seconds: duration, segments } };
    },
  };
}
