import type { GuardrailsResult } from '../contract/wire-types.ts';
import { guardUnavailable } from '../errors/service-error.ts';
import { LineWorkerError } from '../workers/line-worker.ts';
import { ALL_CODES, type GuardCode, type ImageCode, isImageCode, isTextCode, type TextCode } from './codes.ts';
import type { ImageScorer } from './image/image-classifier.ts';
import { matchedImageCodes } from './image/image-codes.ts';
import type { Requester } from './requester.ts';
import type { Region } from './image/image-model.ts';
import { matchedTextCodes, type TextReading } from './text/text-classifier.ts';

/** What the guard needs of a text classifier (the real one, or a scripted one in tests). */
export interface TextScorer {
  /** Starts it and loads its models. */
  warm?(): Promise<void>;
  score(texts: string[], requester?: Requester): Promise<TextReading[]>;
  close?(): Promise<void>;
}

/**
 * A text scorer's failure to give a verdict (its server down, silent or answering something else):
 * the guard fails closed with 503 `guard_unavailable`, never passes the text. Its message is shown
 * to the caller, so it names no address or key.
 */
export class TextReaderUnavailable extends Error {}

/** A text to check, and where it came from (`messages[2]`, `output`). */
export interface Checked {
  source: string;
  text: string;
}

/**
 * A picture to check, where it came from (`messages[1].content[0]`), and the people and animals
 * found in it (undefined when no object detector ran: then gore cannot be judged).
 */
export interface CheckedImage {
  source: string;
  image: Buffer;
  beings: Region[] | undefined;
}

/**
 * Checks texts and pictures against the codes a `<guard>` directive lists and answers the verdict
 * in the contract's shape. A code nothing here can judge is reported unavailable in the verdict,
 * never passed as if checked. With several text readers (the local classifier and a Llama Guard
 * upstream), a text matches a code when any of them matches it.
 */
export class Guard {
  private readonly texts: readonly TextScorer[];

  constructor(text: TextScorer | readonly TextScorer[], private readonly images?: ImageScorer) {
    this.texts = Array.isArray(text) ? text : [text as TextScorer];
  }

  async check(stage: GuardrailsResult['stage'], items: Checked[], codes: GuardCode[], pictures: CheckedImage[] = [], requester?: Requester): Promise<GuardrailsResult> {
    const present = items.filter((item) => item.text.trim() !== '');
    const best = new Map<GuardCode, number>();
    const keep = (found: Map<GuardCode, number>) => found.forEach((score, code) => best.set(code, Math.max(best.get(code) ?? 0, score)));
    const textCodes = codes.filter(isTextCode);
    if (textCodes.length > 0 && present.length > 0) {
      const readings = await Promise.all(this.texts.map((reader) => this.classifyTexts(reader, present, textCodes, requester)));
      readings.flat().forEach(keep);
    }
    const [imageCodes, unavailable] = this.judgeable(codes.filter(isImageCode), pictures);
    if (this.images && imageCodes.length > 0) {
      for (const picture of pictures) keep(matchedImageCodes(await this.images.score(picture.image, picture.beings ?? []), imageCodes));
    }
    const matched = ALL_CODES.filter((code) => best.has(code)).map((code) => ({ code, score: best.get(code)! }));
    return {
      safe: matched.length === 0, stage, codes_checked: [...textCodes, ...imageCodes], codes_unavailable: unavailable,
      matched, checked: [...(textCodes.length > 0 ? present : []), ...(imageCodes.length > 0 ? pictures : [])].map((item) => item.source),
    };
  }

  /** Starts the classifiers and loads their models, so that the first guarded request does not wait. */
  async warm(): Promise<void> {
    await Promise.all([...this.texts.map((reader) => reader.warm?.()), this.images?.warm?.()]);
  }

  close(): Promise<void> {
    return Promise.all([...this.texts.map((reader) => reader.close?.()), this.images?.close?.()]).then(() => undefined);
  }

  /** The image codes that can be judged here, and those that cannot (no classifier; gore with no detector). */
  private judgeable(codes: ImageCode[], pictures: CheckedImage[]): [ImageCode[], ImageCode[]] {
    const can = (code: ImageCode) => this.images !== undefined && (code !== 'S1_IMAGE' || pictures.every((p) => p.beings !== undefined));
    return [codes.filter(can), codes.filter((code) => !can(code))];
  }

  private async classifyTexts(reader: TextScorer, items: Checked[], codes: TextCode[], requester: Requester | undefined): Promise<Map<TextCode, number>[]> {
    try {
      return (await reader.score(items.map((item) => item.text), requester)).map((reading) => matchedTextCodes(reading, codes));
    } catch (err) {
      if (!(err instanceof LineWorkerError || err instanceof TextReaderUnavailable)) throw err;
      throw guardUnavailable(`The guard could not check this request (${err.message}). Retry later.`);
    }
  }
}

/** The content of a blocked answer: `unsafe` and the matched codes, sorted (`unsafe S1,S10`). */
export const unsafeAnswer = (verdict: GuardrailsResult) => `unsafe ${verdict.matched.map((m) => m.code).join(',')}`;
