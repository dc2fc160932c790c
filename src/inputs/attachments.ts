import { createHash } from 'node:crypto';
import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import sharp from 'sharp';
import type { ContentPart, Message } from '../contract/wire-types.ts';
import { invalidRequest, payloadTooLarge } from '../errors/service-error.ts';
import { type FetchLimits, safeFetch, tooLarge } from './safe-fetch.ts';
import { readVideo, type VideoLimits } from './video/read-video.ts';
import { checkZipLimits } from './zip-limits.ts';
import type { AttachmentKind, ResolvedAttachment } from './attachment-types.ts';

export type { Attachment, AttachmentKind, ResolvedAttachment } from './attachment-types.ts';

/** The digest `sent` holds. */
export const sentDigest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export interface AttachmentLimits {
  inlineMaxBytes: number;
  /** Largest image in pixels; judged from the header, so an oversized image is never decoded. */
  imageMaxPixels: number;
  fetch: FetchLimits;
  video: VideoLimits;
  /** `DOCUMENT_MAX_INFLATED_BYTES`: an office document (a zip) whose parts inflate to more is refused. */
  documentMaxInflatedBytes: number;
}

const OOXML = 'application/vnd.openxmlformats-officedocument';
const ODF = 'application/vnd.oasis.opendocument';

/** MIME types the service reads, by kind. Aliases callers use are folded into one spelling. */
const KINDS: Record<string, AttachmentKind | 'video'> = {
  'image/png': 'image', 'image/jpeg': 'image', 'image/gif': 'image', 'image/webp': 'image', 'image/tiff': 'image',
  'application/pdf': 'pdf',
  'audio/wav': 'audio', 'audio/mpeg': 'audio', 'audio/ogg': 'audio', 'audio/webm': 'audio', 'audio/flac': 'audio', 'audio/mp4': 'audio',
  'video/mp4': 'video', 'video/webm': 'video', 'video/quicktime': 'video', 'video/matroska': 'video',
  [`${OOXML}.wordprocessingml.document`]: 'document', [`${OOXML}.spreadsheetml.sheet`]: 'document',
  [`${OOXML}.presentationml.presentation`]: 'document', [`${ODF}.text`]: 'document', [`${ODF}.spreadsheet`]: 'document',
  [`${ODF}.presentation`]: 'document', 'application/epub+zip': 'document', 'application/rtf': 'document',
  'text/plain': 'text', 'text/markdown': 'text', 'text/csv': 'text', 'text/html': 'text', 'application/json': 'text',
};
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg', 'audio/x-wav': 'audio/wav', 'audio/wave': 'audio/wav', 'audio/vnd.wave': 'audio/wav', 'audio/mp3': 'audio/mpeg',
  'audio/x-flac': 'audio/flac', 'audio/x-m4a': 'audio/mp4', 'audio/m4a': 'audio/mp4', 'video/ogg': 'audio/ogg',
  'application/ogg': 'audio/ogg', 'video/x-matroska': 'video/matroska', 'video/x-m4v': 'video/mp4', 'text/rtf': 'application/rtf',
};
/**
 * Byte sniffing names the container, not what is in it: an audio-only webm or mp4 is sniffed as
 * video. Declared as audio, it is read as audio; declared (or sniffed) as video, its streams decide.
 */
const CONTAINERS: Record<string, string> = { 'audio/webm': 'video/webm', 'audio/mp4': 'video/mp4' };
const container = (mime: string | undefined) => (mime && CONTAINERS[mime]) ?? mime;
const EXTENSIONS: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp',
  '.tif': 'image/tiff', '.tiff': 'image/tiff', '.pdf': 'application/pdf', '.wav': 'audio/wav', '.mp3': 'audio/mpeg', '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg', '.weba': 'audio/webm', '.flac': 'audio/flac', '.m4a': 'audio/mp4', '.txt': 'text/plain', '.md': 'text/markdown',
  '.csv': 'text/csv', '.html': 'text/html', '.htm': 'text/html', '.json': 'application/json',
  '.mp4': 'video/mp4', '.m4v': 'video/mp4', '.webm': 'video/webm', '.mov': 'video/quicktime', '.mkv': 'video/matroska',
  '.docx': `${OOXML}.wordprocessingml.document`, '.xlsx': `${OOXML}.spreadsheetml.sheet`, '.pptx': `${OOXML}.presentationml.presentation`,
  '.odt': `${ODF}.text`, '.ods': `${ODF}.spreadsheet`, '.odp': `${ODF}.presentation`, '.epub': 'application/epub+zip', '.rtf': 'application/rtf',
};
const normalize = (mime: string) => {
  const bare = mime.split(';')[0]!.trim().toLowerCase();
  return ALIASES[bare] ?? bare;
};

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)((?:;[a-z0-9.+-]+=[^;,]*)*);base64,([A-Za-z0-9+/]*={0,2})$/i;

/** Strictly `data:<mime>[;param=value…];base64,<data>`, with base64 that decodes whole. */
export function parseDataUrl(url: string, param: string, maxBytes: number): { mime: string; bytes: Buffer } {
  const match = DATA_URL.exec(url);
  if (!match || match[3]!.length % 4 !== 0) {
    throw invalidRequest(`${param} is not a base64 data URL of the form data:<mime>;base64,<data>`, 'invalid_content', param);
  }
  if ((match[3]!.length / 4) * 3 > maxBytes + 2) throw tooLarge(param, maxBytes);
  return { mime: normalize(match[1]!), bytes: Buffer.from(match[3]!, 'base64') };
}

/** Every image and file part of the conversation, decoded or fetched, its type checked. */
/** `signal`: the request's; a URL being fetched stops when it fires (the caller left). */
export async function resolveAttachments(messages: Message[], limits: AttachmentLimits, signal?: AbortSignal): Promise<ResolvedAttachment[]> {
  const parts: { part: Exclude<ContentPart, { type: 'text' }>; param: string }[] = [];
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((part, j) => {
      if (part.type !== 'text') parts.push({ part, param: `messages[${i}].content[${j}]` });
    });
  });
  return (await Promise.all(parts.map(({ part, param }) => resolvePart(part, param, limits, signal)))).flat();
}

async function resolvePart(part: Exclude<ContentPart, { type: 'text' }>, param: string, limits: AttachmentLimits, signal?: AbortSignal): Promise<ResolvedAttachment[]> {
  const source = part.type === 'image_url' ? part.image_url.url : part.file.file_data;
  const filename = part.type === 'file' ? part.file.filename : undefined;
  let declared: string | undefined;
  let bytes: Buffer;
  if (source.startsWith('data:')) {
    ({ mime: declared, bytes } = parseDataUrl(source, param, limits.inlineMaxBytes));
  } else {
    const fetched = await safeFetch(source, limits.fetch, param, signal);
    bytes = fetched.bytes;
    declared = fetched.contentType && normalize(fetched.contentType) !== 'application/octet-stream' ? normalize(fetched.contentType) : undefined;
  }
  const byName = filename ? EXTENSIONS[extname(filename).toLowerCase()] : undefined;
  const sniffed = await fileTypeFromBuffer(bytes);
  const mime = checkedMime(param, declared, byName, sniffed && normalize(sniffed.mime), bytes);
  const kind = KINDS[mime]!;
  if (part.type === 'image_url' && kind !== 'image') {
    throw invalidRequest(`${param}: image_url holds ${mime}, not an image`, 'invalid_content', param);
  }
  const read = { mime, bytes, param, sent: sentDigest(bytes), ...(filename ? { filename } : {}) };
  if (kind === 'video') return readVideo(read, limits.video);
  if (kind === 'image') await checkDecodable(bytes, param, limits.imageMaxPixels);
  if (kind === 'document' && mime !== 'application/rtf') await checkZipLimits(bytes, param, extensionOf(mime), limits.documentMaxInflatedBytes);
  return [{ kind, ...read }];
}

/** The usual file extension of a type the service reads, without the dot: `docx`, `mp4`. */
export const extensionOf = (mime: string) => Object.keys(EXTENSIONS).find((ext) => EXTENSIONS[ext] === mime)?.slice(1) ?? '';

/** The one MIME type the declaration, the file name and the content all agree on. */
function checkedMime(param: string, declared: string | undefined, byName: string | undefined, sniffed: string | undefined, bytes: Buffer): string {
  const claimed = declared ?? byName ?? sniffed;
  if (!claimed || !KINDS[claimed]) {
    throw invalidRequest(`${param}: unsupported type ${claimed ?? 'unknown'}; supported: ${Object.keys(KINDS).join(', ')}`, 'unsupported_content', param);
  }
  if (declared && byName && container(declared) !== container(byName)) {
    throw invalidRequest(`${param}: declared as ${declared} but the file name says ${byName}`, 'invalid_content', param);
  }
  if (KINDS[claimed] === 'text') {
    if (sniffed || !isUtf8Text(bytes)) throw invalidRequest(`${param}: declared as ${claimed} but the content is not text`, 'invalid_content', param);
    return claimed;
  }
  if (container(sniffed) !== container(claimed)) {
    throw invalidRequest(`${param}: declared as ${claimed} but the content is ${sniffed ?? 'not recognised'}`, 'invalid_content', param);
  }
  return claimed;
}

/**
 * Right magic bytes are not a whole image: the tasks must be able to decode it. Its size comes
 * from the header first: a 50 KB PNG may declare 16000×16000 pixels, gigabytes once decoded.
 */
async function checkDecodable(bytes: Buffer, param: string, maxPixels: number): Promise<void> {
  let size;
  try {
    size = await sharp(bytes).metadata();
  } catch (err) {
    throw invalidRequest(`${param} is not a readable image: ${(err as Error).message}`, 'invalid_content', param);
  }
  const { width = 0, height = 0 } = size;
  if (width * height > maxPixels) {
    throw payloadTooLarge('image_too_large',
      `${param} is ${width}×${height} pixels, over the limit of ${maxPixels} pixels (IMAGE_MAX_PIXELS).`, param);
  }
  try {
    if (!width || !height) throw new Error('no size');
    await sharp(bytes, { limitInputPixels: maxPixels }).resize(1, 1).raw().toBuffer();
  } catch (err) {
    throw invalidRequest(`${param} is not a readable image: ${(err as Error).message}`, 'invalid_content', param);
  }
}

function isUtf8Text(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return !bytes.includes(0);
  } catch {
    return false;
  }
}
