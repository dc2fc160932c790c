// Accuracy of the built-in tasks on fixtures the project makes itself. Run: make accuracy
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { CocoDetector } from '../src/tasks/object-detection/coco-detector.ts';
import { createOcrTask } from '../src/tasks/ocr/ocr-task.ts';
import { TesseractReader } from '../src/tasks/ocr/tesseract-reader.ts';
import { PdfReader } from '../src/tasks/ocr/pdf-reader.ts';
import { documentLimitsOf, pdfLimitsOf, speechLimitsOf, workerLimitsOf } from '../src/tasks/create-tasks.ts';
import { DocumentReader } from '../src/tasks/ocr/document-reader.ts';
import { createSpeechToTextTask } from '../src/tasks/speech-to-text/speech-to-text-task.ts';
import { WhisperWorker } from '../src/tasks/speech-to-text/whisper-worker.ts';
import { characterErrorRate, renderTextImage, scannedPdf, speech, wordErrorRate } from '../src/testing/fixtures.ts';
import { taskInput } from '../src/testing/task-input.ts';

const LINES = ['Invoice 4721 from Northwind Traders', 'Total due: 12.50 EUR by 30 June', 'Thank you for your order'];
const SPOKEN = 'The quick brown fox jumps over the lazy dog. Please call me at noon tomorrow. Open the settings and click save.';
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

const config = loadConfig(process.env);
const reader = new TesseractReader(config.tasks.timeoutMs);
const pdfs = new PdfReader(pdfLimitsOf(config));
const offices = new DocumentReader(documentLimitsOf(config));
const ocr = createOcrTask(reader, pdfs, offices);
const readText = async (kind: 'image' | 'pdf', mime: string, bytes: Buffer) => {
  const entry = await ocr.run(taskInput({ attachments: [{ kind, mime, bytes, param: 'fixture' }] }));
  return entry.name === 'ocr' ? entry.result.text : '';
};
for (const dpi of [200, 100, 72]) {
  const text = await readText('image', 'image/png', await renderTextImage(LINES, { dpi }));
  console.log(`OCR, DejaVu Sans at ${dpi} dpi: CER ${pct(characterErrorRate(LINES.join('\n'), text))}`);
}
console.log(`OCR, scanned PDF page: CER ${pct(characterErrorRate(LINES.join('\n'), await readText('pdf', 'application/pdf', await scannedPdf(LINES))))}`);
await reader.close();
await pdfs.close();
await offices.close();

const worker = new WhisperWorker(config.sttPython, 2, speechLimitsOf(config));
const stt = createSpeechToTextTask(worker);
for (const [format, mime] of [['wav', 'audio/wav'], ['mp3', 'audio/mpeg'], ['ogg', 'audio/ogg'], ['webm', 'audio/webm']] as const) {
  const entry = await stt.run(taskInput({ attachments: [{ kind: 'audio', mime, bytes: speech(SPOKEN, format), param: format }] }));
  console.log(`STT, espeak-ng speech as ${format}: WER ${pct(entry.name === 'stt' ? wordErrorRate(SPOKEN, entry.result.text) : 1)}`);
}
await worker.close();

const detector = new CocoDetector(workerLimitsOf(config));
let hits = 0;
const photos: [string, string][] = [['astronaut.png', 'person'], ['coffee.png', 'cup'], ['horse.png', 'horse'], ['chelsea.png', 'cat'], ['motorcycle_left.png', 'motorcycle']];
for (const [file, expected] of photos) {
  const { objects } = await detector.detect(readFileSync(`.cache/fixtures/photos/${file}`));
  const found = objects.some((o) => o.label === expected);
  if (found) hits++;
  console.log(`detection, ${file} (${expected}): ${objects.map((o) => `${o.label} ${o.score.toFixed(2)}`).join(', ') || 'nothing'} ${found ? '✓' : '✗'}`);
}
console.log(`detection hits: ${hits}/${photos.length}`);
process.exit(0);
