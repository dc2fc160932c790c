import type { PrecontextEntry } from '../contract/wire-types.ts';
import type { OutputFormat, TokenUsage } from '../engines/engine.ts';
import { invalidRequest } from '../errors/service-error.ts';
import type { Attachment, AttachmentKind } from '../inputs/attachments.ts';

export type { PrecontextEntry };

/** What a task reads: the request's attachments, its last user message, and its system text. */
export interface TaskInput {
  attachments: Attachment[];
  text: string;
  /** The system messages without their directive tags (e.g. "to Spanish" for translate). */
  instructions: string;
  output: OutputFormat;
  signal: AbortSignal;
  /** Who asked (the API key id): engines that queue jobs count it in each caller's share. */
  caller?: string;
  /** Hears the tokens of a model pass the task makes (the scraper's extraction), so they are billed. */
  onTokens?: (usage: TokenUsage) => void;
  /**
   * Hears work the task commits to as it sends it (a search call, a page fetch), which is spent
   * even if the task never answers: a caller who leaves before the answer still pays it.
   */
  onCommitted?: (units: TaskUnits) => void;
}

/**
 * The units a task's work is counted in, each chosen to follow what the work costs the service
 * (src/chat/prices.ts prices them):
 * - `ocr_pages`: each page OCR read (an image, a video frame, a PDF page, an office document's
 *   text or picture): Tesseract's time grows with the pages, not with the bytes sent.
 * - `detected_images`: each image or frame object or GUI detection looked at (one model pass each).
 * - `audio_seconds`: each started second of audio transcribed: Whisper's time follows the audio's length.
 * - `searches`: each web search (one call on the operator's search key, billed per call upstream).
 * - `pages_fetched`: each page the scraper fetched or read (a fetch and a parse in a worker); the
 *   model's extraction is billed in tokens, like any generation.
 * - `translated_kchars`: each started 1,000 characters translated (apertium's time follows the text).
 */
export type TaskUnit = 'ocr_pages' | 'detected_images' | 'audio_seconds' | 'searches' | 'pages_fetched' | 'translated_kchars';
export type TaskUnits = Partial<Record<TaskUnit, number>>;

/** A built-in task; `run` returns its precontext entry (the name it reports and its result). */
export interface Task {
  readonly name: TaskName;
  run(input: TaskInput): Promise<PrecontextEntry>;
}

/** The names `<task>NAME</task>` accepts (the spec's list). */
export const TASK_NAMES = ['ocr', 'object_detection', 'gui_detection', 'web_search', 'scraper', 'speech_to_text', 'translate'] as const;
export type TaskName = (typeof TASK_NAMES)[number];

/** `time_seconds` for a frame taken from a video, nothing for anything else. */
export const frameTime = (attachment: Attachment): { time_seconds?: number } =>
  attachment.frame ? { time_seconds: attachment.frame.seconds } : {};

/** The attachments a task reads; 400 when the request has none of them. */
export function attachmentsFor(task: TaskName, input: TaskInput, kinds: AttachmentKind[], what: string): Attachment[] {
  const found = input.attachments.filter((a) => kinds.includes(a.kind));
  if (found.length === 0) throw invalidRequest(`The ${task} task needs ${what} in the user message.`, 'invalid_request', 'messages');
  return found;
}
