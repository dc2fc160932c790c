import type { ImageCode } from '../codes.ts';
import type { ImageScores, Region } from './image-model.ts';

/**
 * The share of nsfwjs's unsafe classes at which a picture matches. No benign picture of the
 * Debian set (bench/results/guard-images.json) reaches it; the highest, a retina scan, is at 0.66.
 */
const NSFW_THRESHOLD = 0.7;

/**
 * The share of a person's or animal's box in blood colours at which S1_IMAGE matches: twice the
 * highest of the Debian set's photos (an astronaut beside a flag, 0.08).
 */
const BLOOD_THRESHOLD = 0.15;

/** COCO labels of beings that can bleed: where the blood measure looks. */
const BEINGS = new Set(['person', 'bird', 'cat', 'dog', 'horse', 'sheep', 'cow', 'elephant', 'bear', 'zebra', 'giraffe']);

/** The boxes of the beings among an object detector's findings. */
export const beingRegions = (objects: { label: string; bbox: Region }[]): Region[] =>
  objects.filter((o) => BEINGS.has(o.label)).map((o) => o.bbox);

/** Each image code's score for one picture: S12 reads nudity, S15 any NSFW class, S1 blood on a being. */
export function imageCodeScores(scores: ImageScores): Record<ImageCode, number> {
  const { Porn, Hentai, Sexy } = scores.nsfw;
  return { S1_IMAGE: scores.bloodOnBeing, S12_IMAGE: Porn + Hentai, S15_IMAGE: Porn + Hentai + Sexy };
}

/** The listed image codes a picture matches, with their scores. */
export function matchedImageCodes(scores: ImageScores, codes: ImageCode[]): Map<ImageCode, number> {
  const byCode = imageCodeScores(scores);
  const threshold = (code: ImageCode) => (code === 'S1_IMAGE' ? BLOOD_THRESHOLD : NSFW_THRESHOLD);
  return new Map(codes.filter((code) => byCode[code] >= threshold(code)).map((code) => [code, Math.min(1, byCode[code])]));
}
