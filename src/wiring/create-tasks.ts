import type { Config } from '../config.ts';
import type { Engine } from '../engines/engine.ts';
import type { AttachmentLimits } from '../inputs/attachments.ts';
import { createGuiDetectionTask } from '../tasks/gui-detection/gui-detection-task.ts';
import { CocoDetector } from '../tasks/object-detection/coco-detector.ts';
import { createObjectDetectionTask } from '../tasks/object-detection/object-detection-task.ts';
import { createOcrTask } from '../tasks/ocr/ocr-task.ts';
import { TesseractReader } from '../tasks/ocr/tesseract-reader.ts';
import { type PdfLimits, PdfReader } from '../tasks/ocr/pdf-reader.ts';
import { type DocumentLimits, DocumentReader } from '../tasks/ocr/document-reader.ts';
import { GuiDetector } from '../tasks/gui-detection/gui-detector.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import type { WorkerLimits } from '../workers/isolated-worker.ts';
import { createSpeechToTextTask } from '../tasks/speech-to-text/speech-to-text-task.ts';
import { type SpeechLimits, WhisperWorker } from '../tasks/speech-to-text/whisper-worker.ts';
import { Apertium } from '../tasks/translate/apertium.ts';
import { createTranslateTask } from '../tasks/translate/translate-task.ts';
import { LanguageDetector } from '../tasks/translate/language-detector.ts';
import { createScraperTask } from '../tasks/scraper/scraper-task.ts';
import { PageReader, type ScraperLimits } from '../tasks/scraper/page-reader.ts';
import { createBraveProvider, createSearxngProvider, type SearchProvider } from '../tasks/web-search/search-provider.ts';
import { createWebSearchTask } from '../tasks/web-search/web-search-task.ts';

export function attachmentLimitsOf(config: Config): AttachmentLimits {
  const a = config.attachments;
  return {
    inlineMaxBytes: a.inlineMaxBytes,
    imageMaxPixels: a.imageMaxPixels,
    fetch: { maxBytes: a.urlMaxBytes, timeoutMs: a.fetchTimeoutMs, maxRedirects: 5, allowLoopback: a.fetchAllowLoopback },
    video: { ...workerLimitsOf(config), maxSeconds: config.tasks.videoMaxSeconds, maxFrames: config.tasks.videoMaxFrames, maxPixels: a.imageMaxPixels },
    documentMaxInflatedBytes: config.tasks.documentMaxInflatedBytes,
  };
}

export function workerLimitsOf(config: Config): WorkerLimits {
  const { timeoutMs, memoryMb, queueMax, queuePerCaller } = config.tasks;
  return { timeoutMs, memoryMb, maxQueued: queueMax, perCaller: queuePerCaller };
}

export function pdfLimitsOf(config: Config): PdfLimits {
  const { pdfMaxPages, pdfMaxInflatedBytes } = config.tasks;
  return { ...workerLimitsOf(config), maxPages: pdfMaxPages, maxInflatedBytes: pdfMaxInflatedBytes, maxPixels: config.attachments.imageMaxPixels };
}

export function documentLimitsOf(config: Config): DocumentLimits {
  const { documentMaxInflatedBytes, documentMaxImages } = config.tasks;
  return { ...workerLimitsOf(config), maxInflatedBytes: documentMaxInflatedBytes, maxImages: documentMaxImages, maxPixels: config.attachments.imageMaxPixels };
}

export function scraperLimitsOf(config: Config): ScraperLimits {
  return { ...workerLimitsOf(config), ...config.scraper };
}

export function speechLimitsOf(config: Config): SpeechLimits {
  return { ...workerLimitsOf(config), maxSeconds: config.tasks.audioMaxSeconds };
}

function searchProviderOf(config: Config): SearchProvider | undefined {
  const { searxngUrl, braveApiKey, timeoutMs } = config.search;
  if (searxngUrl) return createSearxngProvider(searxngUrl, timeoutMs);
  if (braveApiKey) return createBraveProvider(braveApiKey, timeoutMs);
  return undefined;
}

/** Every built-in task this deployment runs; `close()` on the registry ends their workers. */
export function createTasks(config: Config, engine: Engine): TaskRegistry {
  const limits = attachmentLimitsOf(config);
  const workerLimits = workerLimitsOf(config);
  const reader = new TesseractReader(workerLimits); // one Tesseract worker for OCR and GUI detection
  const pdfs = new PdfReader(pdfLimitsOf(config));
  const offices = new DocumentReader(documentLimitsOf(config));
  const gui = new GuiDetector(reader, workerLimits);
  const detector = new CocoDetector(workerLimits);
  const pages = new PageReader(scraperLimitsOf(config));
  const languages = new LanguageDetector(workerLimits);
  const whisper = new WhisperWorker(config.sttPython, config.local.threads, speechLimitsOf(config));
  return new TaskRegistry([
    createOcrTask(reader, pdfs, offices),
    createGuiDetectionTask(gui),
    createObjectDetectionTask(detector),
    createScraperTask({ engine, fetchLimits: limits.fetch, pages }),
    createWebSearchTask(searchProviderOf(config)),
    createTranslateTask(new Apertium(workerLimits), languages),
    createSpeechToTextTask(whisper),
  ], [reader, pdfs, offices, gui, detector, pages, languages, whisper]);
}
