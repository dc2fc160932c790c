import type { Config } from '../config.ts';
import type { Engine } from '../engines/engine.ts';
import type { AttachmentLimits } from '../inputs/attachments.ts';
import { createGuiDetectionTask } from './gui-detection/gui-detection-task.ts';
import { CocoDetector } from './object-detection/coco-detector.ts';
import { createObjectDetectionTask } from './object-detection/object-detection-task.ts';
import { createOcrTask } from './ocr/ocr-task.ts';
import { TesseractReader } from './ocr/tesseract-reader.ts';
import { TaskRegistry } from './registry.ts';
import { createSpeechToTextTask } from './speech-to-text/speech-to-text-task.ts';
import { WhisperWorker } from './speech-to-text/whisper-worker.ts';
import { Apertium } from './translate/apertium.ts';
import { createTranslateTask } from './translate/translate-task.ts';
import { createScraperTask } from './scraper/scraper-task.ts';
import { createBraveProvider, createSearxngProvider, type SearchProvider } from './web-search/search-provider.ts';
import { createWebSearchTask } from './web-search/web-search-task.ts';

export function attachmentLimitsOf(config: Config): AttachmentLimits {
  const a = config.attachments;
  return {
    inlineMaxBytes: a.inlineMaxBytes,
    fetch: { maxBytes: a.urlMaxBytes, timeoutMs: a.fetchTimeoutMs, maxRedirects: 5, allowLoopback: a.fetchAllowLoopback },
  };
}

function searchProviderOf(config: Config): SearchProvider | undefined {
  const { searxngUrl, braveApiKey, timeoutMs } = config.search;
  if (searxngUrl) return createSearxngProvider(searxngUrl, timeoutMs);
  if (braveApiKey) return createBraveProvider(braveApiKey, timeoutMs);
  return undefined;
}

/** Every built-in task this deployment runs. */
export function createTasks(config: Config, engine: Engine): TaskRegistry {
  const limits = attachmentLimitsOf(config);
  const reader = new TesseractReader(); // one Tesseract worker for OCR and GUI detection
  return new TaskRegistry([
    createOcrTask(reader),
    createGuiDetectionTask(reader),
    createObjectDetectionTask(new CocoDetector()),
    createScraperTask({ engine, fetchLimits: limits.fetch }),
    createWebSearchTask(searchProviderOf(config)),
    createTranslateTask(new Apertium()),
    createSpeechToTextTask(new WhisperWorker(config.sttPython, config.local.threads)),
  ]);
}
