import { invalidRequest } from '../errors/service-error.ts';

/** The hazard categories of the Llama Guard 3 taxonomy, checked in text. */
export const TEXT_CODES = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10', 'S11', 'S12', 'S13', 'S14'] as const;
/** Checked in images: gore, nudity, and any NSFW picture. */
export const IMAGE_CODES = ['S1_IMAGE', 'S12_IMAGE', 'S15_IMAGE'] as const;

export type TextCode = (typeof TEXT_CODES)[number];
export type ImageCode = (typeof IMAGE_CODES)[number];
export type GuardCode = TextCode | ImageCode;

export const CODE_NAMES: Record<GuardCode, string> = {
  S1: 'violent crimes', S2: 'non-violent crimes', S3: 'sex-related crimes', S4: 'child sexual exploitation',
  S5: 'defamation', S6: 'specialized advice', S7: 'privacy', S8: 'intellectual property',
  S9: 'indiscriminate weapons', S10: 'hate', S11: 'suicide and self-harm', S12: 'sexual content',
  S13: 'elections', S14: 'code interpreter abuse',
  S1_IMAGE: 'gore or graphic violence in an image', S12_IMAGE: 'nudity or sexual content in an image', S15_IMAGE: 'any NSFW image',
};

/** Every code, in the order verdicts list them. */
export const ALL_CODES: GuardCode[] = [...TEXT_CODES, ...IMAGE_CODES];

/**
 * The codes of a `<guard>` directive: comma-separated, case and spaces ignored, `ALL` for every
 * code. An unknown code is the caller's mistake (400, naming the valid ones), never ignored: a
 * guard that silently checks less than was asked looks like protection and is not.
 */
export function parseGuardCodes(listed: string[]): GuardCode[] {
  const wanted = new Set<GuardCode>();
  for (const raw of listed) {
    const code = raw.replace(/\s+/g, '').toUpperCase();
    if (code === '') continue;
    if (code === 'ALL') ALL_CODES.forEach((c) => wanted.add(c));
    else if ((ALL_CODES as string[]).includes(code)) wanted.add(code as GuardCode);
    else {
      throw invalidRequest(`Unknown guard code "${raw.trim()}" in <guard>. Valid codes: ${ALL_CODES.join(', ')}, ALL.`, 'invalid_guard_code', 'messages');
    }
  }
  if (wanted.size === 0) throw invalidRequest(`<guard> lists no code. Valid codes: ${ALL_CODES.join(', ')}, ALL.`, 'invalid_guard_code', 'messages');
  return ALL_CODES.filter((c) => wanted.has(c)); // in a stable order
}

export const isTextCode = (code: GuardCode): code is TextCode => (TEXT_CODES as readonly string[]).includes(code);
export const isImageCode = (code: GuardCode): code is ImageCode => (IMAGE_CODES as readonly string[]).includes(code);
