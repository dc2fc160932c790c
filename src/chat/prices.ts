import type { TokenUsage } from '../engines/engine.ts';
import type { Attachment, AttachmentKind } from '../inputs/attachments.ts';
import type { PrecontextEntry, TaskName, TaskUnit, TaskUnits } from '../tasks/task.ts';

/** Credits per 1,000 prompt and completion tokens, and per unit of each task's work. */
export interface Prices {
  prompt: number;
  completion: number;
  /** Unset units are free (tests that price only tokens). */
  units?: TaskUnits;
}

/** What a request used: tokens over every pass, and the task units its tasks reported. */
export type Used = TokenUsage;

/** The credits `used` costs: ⌈(prompt × p + completion × c) / 1000 + Σ units × price⌉. */
export function creditsFor(prices: Prices, used: Used): number {
  const tokens = (used.promptTokens * prices.prompt + used.completionTokens * prices.completion) / 1000;
  let units = 0;
  for (const [unit, count] of Object.entries(used.taskUnits ?? {})) units += (count ?? 0) * (prices.units?.[unit as TaskUnit] ?? 0);
  return Math.max(0, Math.ceil(tokens + units - 1e-9)); // the epsilon: 0.1 + 0.2 is not 0.3 in floats
}

export function addUnits(into: TaskUnits, more: TaskUnits): TaskUnits {
  for (const [unit, count] of Object.entries(more)) {
    if (count) into[unit as TaskUnit] = (into[unit as TaskUnit] ?? 0) + count;
  }
  return into;
}

/** The units a task's answer says it consumed (its precontext entry is what it did). */
export function unitsOf(entry: PrecontextEntry, input: { text: string }): TaskUnits {
  switch (entry.name) {
    case 'ocr':
      return { ocr_pages: entry.result.pages.length };
    case 'object_detection':
    case 'gui_detection':
      return { detected_images: entry.result.images.length };
    case 'stt':
      return { audio_seconds: Math.ceil(entry.result.duration_seconds) };
    case 'web_search':
      return { searches: 1 };
    case 'scraper':
      return { pages_fetched: 1 };
    case 'translate':
      return { translated_kchars: Math.ceil((entry.result.text || input.text).length / 1000) };
    default:
      return {};
  }
}

/** The most a task may read, from the deployment's limits: what a reservation counts on. */
export interface WorkBounds {
  pdfMaxPages: number;
  documentMaxImages: number;
  audioMaxSeconds: number;
}


/**
 * The most units `tasks` can consume on these attachments and this text, known before any of
 * them runs: a reservation that covers the real cost (a PDF is read to its page limit at most,
 * audio to its duration limit, a frame is one image).
 */
export function boundUnits(tasks: TaskName[], attachments: Pick<Attachment, 'kind'>[], text: string, bounds: WorkBounds): TaskUnits {
  const count = (kinds: AttachmentKind[]) => attachments.filter((a) => kinds.includes(a.kind)).length;
  const units: TaskUnits = {};
  for (const task of new Set(tasks)) {
    switch (task) {
      case 'ocr':
        addUnits(units, { ocr_pages: count(['image']) + count(['pdf']) * bounds.pdfMaxPages + count(['document']) * (1 + bounds.documentMaxImages) });
        break;
      case 'object_detection':
      case 'gui_detection':
        addUnits(units, { detected_images: count(['image']) });
        break;
      case 'speech_to_text':
        addUnits(units, { audio_seconds: count(['audio']) * bounds.audioMaxSeconds });
        break;
      case 'web_search':
        addUnits(units, { searches: 1 });
        break;
      case 'scraper':
        addUnits(units, { pages_fetched: 1 });
        break;
      case 'translate':
        addUnits(units, { translated_kchars: Math.max(1, Math.ceil(text.length / 1000)) });
        break;
    }
  }
  return units;
}
