import { extname } from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import sharp from 'sharp';
import type { ContentPart, Message } from '../contract/wire-types.ts';
import { invalidRequest, ServiceError } from '../errors/service-error.ts';
import { type FetchLimits, safeFetch, tooLarge } from './safe-fetch.ts';

export type AttachmentKind = 'image' | 'pdf' | 'audio' | 'text';

export interface Attachment {
  kind: AttachmentKind;
  mime: string;
  bytes: Buffer;
  /** Where in the request it came from, e.g. `messages[1].content[0]`. */
  param: string;
  filename?: string;
}

export interface AttachmentLimits {
  inlineMaxBytes: number;
  /** Largest image in pixels; judged from the header, so an oversized image is never decoded. */
  imageMaxPixels: number;
  fetch: FetchLimits;
}

/** MIME types the service reads, by kind. Aliases callers use are folded into one spelling. */
const KINDS: Record<string, AttachmentKind> = {
  'image/png': 'image', 'image/jpeg': 'image', 'image/gif': 'image', 'image/webp': 'image', 'image/tiff': 'image',
  'application/pdf': 'pdf',
  'audio/wav': 'audio', 'audio/mpeg': 'audio', 'audio/ogg': 'audio', 'audio/webm': 'audio', 'audio/flac': 'audio', 'audio/mp4': 'audio',
  'text/plain': 'text', 'text/markdown': 'text', 'text/csv': 'text', 'text/html': 'text', 'application/json': 'text',
};
const ALIASES: Record<string, string> = {
  'image/jpg': 'image/jpeg', 'audio/x-wav': 'audio/wav', 'audio/wave': 'audio/wav', 'audio/vnd.wave': 'audio/wav', 'audio/mp3': 'audio/mpeg',
  'audio/x-flac': 'audio/flac', 'audio/x-m4a': 'audio/mp4', 'audio/m4a': 'audio/mp4', 'video/webm': 'audio/webm', 'video/ogg': 'audio/ogg',
  'application/ogg': 'audio/ogg',
};
const EXTENSIONS: Record<string, string> = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp',
  '.tif': 'image/tiff', '.tiff': 'image/tiff', '.pdf': 'application/pdf', '.wav': 'audio/wav', '.mp3': 'audio/mpeg', '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg', '.webm': 'audio/webm', '.flac': 'audio/flac', '.m4a': 'audio/mp4', '.txt': 'text/plain', '.md': 'text/markdown',
  '.csv': 'text/csv', '.html': 'text/html', '.htm': 'text/html', '.json': 'application/json',
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
export async function resolveAttachments(messages: Message[], limits: AttachmentLimits): Promise<Attachment[]> {
  const parts: { part: Exclude<ContentPart, { type: 'text' }>; param: string }[] = [];
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((part, j) => {
      if (part.type !== 'text') parts.push({ part, param: `messages[${i}].content[${j}]` });
    });
  });
  return Promise.all(parts.map(({ part, param }) => resolvePart(part, param, limits)));
}

async function resolvePart(part: Exclude<ContentPart, { type: 'text' }>, param: string, limits: AttachmentLimits): Promise<Attachment> {
  const source = part.type === 'image_url' ? part.image_url.url : part.file.file_data;
  const filename = part.type === 'file' ? part.file.filename : undefined;
  let declared: string | undefined;
  let bytes: Buffer;
  if (source.startsWith('data:')) {
    ({ mime: declared, bytes } = parseDataUrl(source, param, limits.inlineMaxBytes));
  } else {
    const fetched = await safeFetch(source, limits.fetch, param);
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
  if (kind === 'image') await checkDecodable(bytes, param, limits.imageMaxPixels);
  return { kind, mime, bytes, param, ...(filename ? { filename } : {}) };
}

/** The one MIME type the declaration, the file name and the content all agree on. */
function checkedMime(param: string, declared: string | undefined, byName: string | undefined, sniffed: string | undefined, bytes: Buffer): string {
  const claimed = declared ?? byName ?? sniffed;
  if (!claimed || !KINDS[claimed]) {
    throw invalidRequest(`${param}: unsupported type ${claimed ?? 'unknown'}; supported: ${Object.keys(KINDS).join(', ')}`, 'unsupported_content', param);
  }
  if (declared && byName && declared !== byName) {
    throw invalidRequest(`${param}: declared as ${declared} but the file name says ${byName}`, 'invalid_content', param);
  }
  if (KINDS[claimed] === 'text') {
    if (sniffed || !isUtf8Text(bytes)) throw invalidRequest(`${param}: declared as ${claimed} but the content is not text`, 'invalid_content', param);
    return claimed;
  }
  if (sniffed !== claimed) {
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
    throw new ServiceError(413, 'payload_too_large', 'image_too_large',
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
