// Accuracy of the built-in tasks on fixtures the project makes itself. Run: make accuracy
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { CocoDetector } from '../src/tasks/object-detection/coco-detector.ts';
import { createOcrTask } from '../src/tasks/ocr/ocr-task.ts';
import { TesseractReader } from '../src/tasks/ocr/tesseract-reader.ts';
import { PdfReader } from '../src/tasks/ocr/pdf-reader.ts';
import { attachmentLimitsOf, documentLimitsOf, pdfLimitsOf, speechLimitsOf, workerLimitsOf } from '../src/wiring/create-tasks.ts';
import { DocumentReader } from '../src/tasks/ocr/document-reader.ts';
import { createSpeechToTextTask } from '../src/tasks/speech-to-text/speech-to-text-task.ts';
import { WhisperWorker } from '../src/tasks/speech-to-text/whisper-worker.ts';
import { characterErrorRate, dataUrl, renderTextImage, scannedPdf, speech, spokenVideo, wordErrorRate, wordRecall } from '../src/testing/fixtures.ts';
import { openDocumentText, presentation, spreadsheet, wordDocument } from '../src/testing/office-fixtures.ts';
import { resolveAttachments } from '../src/inputs/attachments.ts';
import { taskInput } from '../src/testing/task-input.ts';

const LINES = ['Invoice 4721 from Northwind Traders', 'Total due: 12.50 EUR by 30 June', 'Thank you for your order'];
const SPOKEN = 'The quick brown fox jumps over the lazy dog. Please call me at noon tomorrow. Open the settings and click save.';
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

const config = loadConfig(process.env);
const reader = new TesseractReader(workerLimitsOf(config));
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

// Office documents: the words the fixture holds, found in the Markdown (recall); tables kept as rows.
const OOXML = 'application/vnd.openxmlformats-officedocument';
const TABLE = [['Region', 'Q1', 'Q2'], ['North', '10', '12'], ['South', '7', '9']];
const PICTURE = ['Delivery note 5530', 'Shipped to Oslo'];
const documents: [string, string, Buffer, string][] = [
  ['docx', `${OOXML}.wordprocessingml.document`, await wordDocument({ heading: 'Quarterly report', paragraphs: ['Revenue grew by 12 percent.'], table: TABLE }), 'Quarterly report Revenue grew by 12 percent.'],
  ['xlsx', `${OOXML}.spreadsheetml.sheet`, await spreadsheet([{ name: 'Sales', rows: TABLE.map((r, i) => (i === 0 ? r : [r[0]!, Number(r[1]), Number(r[2])])) }]), ''],
  ['pptx', `${OOXML}.presentationml.presentation`, await presentation([{ title: 'Roadmap', bullets: ['Ship video support'], table: TABLE }]), 'Roadmap Ship video support'],
  ['odt', 'application/vnd.oasis.opendocument.text', openDocumentText(['Minutes of the meeting'], TABLE), 'Minutes of the meeting'],
];
const readOcr = async (kind: 'document' | 'image', mime: string, bytes: Buffer) => {
  const entry = await ocr.run(taskInput({ attachments: [{ kind, mime, bytes, param: 'fixture' }] }));
  return entry.name === 'ocr' ? entry.result : { text: '', pages: [] };
};
for (const [format, mime, bytes, words] of documents) {
  const { text } = await readOcr('document', mime, bytes);
  const rows = TABLE.filter((r) => text.includes(`| ${r.join(' | ')} |`)).length;
  console.log(`document, ${format}: word recall ${pct(wordRecall(`${words} ${TABLE.flat().join(' ')}`, text))}, table rows as Markdown ${rows}/${TABLE.length}`);
}
const withPicture = await readOcr('document', `${OOXML}.wordprocessingml.document`,
  await wordDocument({ heading: 'H', paragraphs: ['p'], image: await renderTextImage(PICTURE) }));
console.log(`document, docx picture by OCR: word recall ${pct(wordRecall(PICTURE.join(' '), withPicture.pages[1]?.text ?? ''))}`);

// Video: the slides' words read from the sampled frames.
const SLIDES = ['Quarterly Budget', 'Noon meeting', 'Ship video support'];
for (const format of ['mp4', 'webm'] as const) {
  const frames = (await resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename: `v.${format}`, file_data: dataUrl(`video/${format}`, await spokenVideo(SPOKEN, SLIDES, format)) } }] }],
    attachmentLimitsOf(config))).filter((a) => a.kind === 'image');
  const entry = await ocr.run(taskInput({ attachments: frames }));
  console.log(`video, ${format}: ${frames.length} frames, slide words by OCR: recall ${pct(entry.name === 'ocr' ? wordRecall(SLIDES.join(' '), entry.result.text) : 0)}`);
}
await reader.close();
await pdfs.close();
await offices.close();

const worker = new WhisperWorker(config.sttPython, 2, speechLimitsOf(config));
const stt = createSpeechToTextTask(worker);
for (const [format, mime] of [['wav', 'audio/wav'], ['mp3', 'audio/mpeg'], ['ogg', 'audio/ogg'], ['webm', 'audio/webm']] as const) {
  const entry = await stt.run(taskInput({ attachments: [{ kind: 'audio', mime, bytes: speech(SPOKEN, format), param: format }] }));
  console.log(`STT, espeak-ng speech as ${format}: WER ${pct(entry.name === 'stt' ? wordErrorRate(SPOKEN, entry.result.text) : 1)}`);
}
for (const format of ['mp4', 'webm'] as const) {
  const audio = (await resolveAttachments([{ role: 'user', content: [{ type: 'file', file: { filename: `v.${format}`, file_data: dataUrl(`video/${format}`, await spokenVideo(SPOKEN, ['Slide'], format)) } }] }],
    attachmentLimitsOf(config))).filter((a) => a.kind === 'audio');
  const entry = await stt.run(taskInput({ attachments: audio }));
  console.log(`STT, the same speech as a ${format} video's sound track: WER ${pct(entry.name === 'stt' ? wordErrorRate(SPOKEN, entry.result.text) : 1)}`);
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
