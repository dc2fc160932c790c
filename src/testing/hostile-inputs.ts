// Hostile inputs, made in memory and deterministically (no binary files in the repository): small
// requests that cost the server far more than their size. The tests and bench/hostile.bench.ts use them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as zlib from 'node:zlib';
import { PDFDocument } from 'pdf-lib';

const CHUNK = 1024 * 1024;

/**
 * `total` bytes made of `unit` repeated, zlib-deflated (with header and Adler-32) through a
 * streaming Deflate fed 1 MiB at a time: only the compressed output is ever held in memory.
 */
async function deflateRepeated(unit: Buffer, total: number): Promise<Buffer> {
  const perChunk = Math.max(1, Math.floor(CHUNK / unit.length));
  const chunk = Buffer.alloc(perChunk * unit.length);
  for (let i = 0; i < perChunk; i++) unit.copy(chunk, i * unit.length);
  const deflate = zlib.createDeflate({ level: 9, memLevel: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (b: Buffer) => out.push(b));
  const ended = new Promise<void>((resolve, reject) => {
    deflate.once('end', resolve);
    deflate.once('error', reject);
  });
  for (let left = total; left > 0; left -= chunk.length) {
    const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  deflate.end();
  await ended;
  return Buffer.concat(out);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const nativeCrc32 = (zlib as unknown as { crc32?: (data: Buffer) => number }).crc32;
function crc32(data: Buffer): number {
  if (nativeCrc32) return nativeCrc32(data) >>> 0;
  let c = 0xffffffff;
  for (const byte of data) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Attacks image decoding: a ~30 KB 1-bit black PNG that declares width×height pixels (16000² ≈ 256 Mpx to decode). */
export async function hugePng(width: number, height: number): Promise<Buffer> {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([1, 0, 0, 0, 0], 8); // bit depth 1, greyscale, deflate, adaptive filtering, no interlace
  // Every row is filter byte 0 and ceil(width/8) zero bytes: the raw image is one zero row repeated.
  const row = Buffer.alloc(1 + Math.ceil(width / 8));
  const idat = await deflateRepeated(row, row.length * height);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

export type BombFill = 'moveto' | 'spaces';

/**
 * Attacks PDF parsing and rendering: a one-page PDF whose content stream is /FlateDecode of at
 * least `inflatedBytes` bytes of valid content (`0 0 m\n` repeated, or spaces), ~1000:1 compressed.
 */
export async function deflateBombPdf(inflatedBytes: number, fill: BombFill = 'moveto'): Promise<Buffer> {
  const unit = Buffer.from(fill === 'moveto' ? '0 0 m\n' : ' ', 'latin1');
  const stream = await deflateRepeated(unit, Math.ceil(inflatedBytes / unit.length) * unit.length); // whole operators only
  const parts: Buffer[] = [Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  const push = (b: Buffer) => {
    parts.push(b);
    length += b.length;
  };
  const object = (n: number, body: Buffer[] | string) => {
    offsets[n] = length;
    push(Buffer.from(`${n} 0 obj\n`, 'latin1'));
    for (const b of typeof body === 'string' ? [Buffer.from(body, 'latin1')] : body) push(b);
    push(Buffer.from('\nendobj\n', 'latin1'));
  };
  object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  object(2, '<< /Type /Pages /Kids [3 0 R] /Count 1 >>');
  object(3, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << >> /Contents 4 0 R >>');
  object(4, [Buffer.from(`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'), stream, Buffer.from('\nendstream', 'latin1')]);
  const xref = length;
  const entries = offsets.slice(1).map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  push(Buffer.from(`xref\n0 5\n0000000000 65535 f \n${entries}trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

/** Attacks per-page work (rendering and OCR of every page without a text layer): N blank A4 pages. */
export async function blankPagesPdf(pages: number): Promise<Buffer> {
  const doc = await PDFDocument.create({ updateMetadata: false }); // no dates: the same N gives the same bytes
  for (let i = 0; i < pages; i++) doc.addPage([595, 842]);
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

/**
 * Attacks the directive regexes of src/chat/directives.ts (catastrophic backtracking): `<tag>`
 * then n whitespace characters and no closing tag, e.g. spacesAfterTag('guard', 1200, '\t').
 */
export function spacesAfterTag(tag: string, n: number, whitespace = ' '): string {
  return `<${tag}>${whitespace.repeat(n)}`;
}

/** Attacks the attachment-marker regex in src/chat/moa-router.ts (quadratic scan): an unclosed marker n times. */
export function repeatedAttachmentMarker(n: number): string {
  return '[file attached: '.repeat(n);
}

/**
 * Attacks video reading with length: a 64×64 black mp4 lasting `seconds`, one frame a minute, a
 * few KB (a 2-hour one takes ffmpeg a fraction of a second to make).
 */
export function longVideo(seconds: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'long-video-'));
  try {
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', `color=c=black:s=64x64:r=1/60:d=${seconds}`,
      '-threads', '1', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', join(dir, 'long.mp4')]);
    return readFileSync(join(dir, 'long.mp4'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Costs video reading real work while staying under the limits: `seconds` of 640×360 moving test
 * pattern at 10 fps with a keyframe every 10 s (seeking decodes from the keyframe before), a tone.
 */
export function busyVideo(seconds: number): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'busy-video-'));
  try {
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc2=s=640x360:r=10:d=${seconds}`,
      '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`, '-threads', '1', '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '51',
      '-g', '100', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '16k', join(dir, 'busy.mp4')]);
    return readFileSync(join(dir, 'busy.mp4'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Attacks the scraper with breadth: a page of `n` links (2 million is ~36 MB of HTML). */
export function manyLinksHtml(n: number): Buffer {
  const link = Buffer.from('<a href="/x">x</a>');
  const head = Buffer.from('<!doctype html><html><head><title>links</title></head><body>');
  const page = Buffer.alloc(head.length + link.length * n + 14);
  head.copy(page, 0);
  for (let i = 0; i < n; i++) link.copy(page, head.length + i * link.length);
  page.write('</body></html>', head.length + link.length * n);
  return page;
}

/** Attacks the scraper with depth: `depth` tables, each in the one cell of the table around it. */
export function nestedTablesHtml(depth: number): Buffer {
  return Buffer.from(`<!doctype html><html><body>${'<table><tr><td>cell'.repeat(depth)}${'</td></tr></table>'.repeat(depth)}</body></html>`);
}
