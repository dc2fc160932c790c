// Inputs the tests make themselves, with known content: text rendered to images, PDFs with and
// without a text layer, speech by espeak-ng in several formats, and the error rates to score them.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import sharp from 'sharp';

/** Black text on white, rendered by sharp (Pango) with a DejaVu font. */
export async function renderTextImage(lines: string[], options: { dpi?: number; font?: string } = {}): Promise<Buffer> {
  const escaped = lines.join('\n').replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return sharp({ text: { text: escaped, font: options.font ?? 'DejaVu Sans', dpi: options.dpi ?? 200, rgba: true } })
    .flatten({ background: '#ffffff' })
    .extend({ top: 24, bottom: 24, left: 24, right: 24, background: '#ffffff' })
    .png()
    .toBuffer();
}

/** A one-page PDF whose text is in its text layer. */
export async function textPdf(lines: string[]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const page = doc.addPage([595, 842]);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  lines.forEach((line, i) => page.drawText(line, { x: 50, y: 780 - i * 24, size: 14, font }));
  return Buffer.from(await doc.save());
}

/** A one-page PDF holding only a picture of the text, as a scanner makes. */
export async function scannedPdf(lines: string[]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const png = await doc.embedPng(await renderTextImage(lines, { dpi: 150 }));
  const page = doc.addPage([png.width, png.height]);
  page.drawImage(png, { x: 0, y: 0, width: png.width, height: png.height });
  return Buffer.from(await doc.save());
}

export const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;

/** Character error rate: edit distance over the reference length, on whitespace-folded text. */
export function characterErrorRate(reference: string, hypothesis: string): number {
  const fold = (s: string) => [...s.replace(/\s+/g, ' ').trim()];
  return editDistance(fold(reference), fold(hypothesis)) / Math.max(1, fold(reference).length);
}

/** `text` spoken by espeak-ng, encoded by ffmpeg as wav, mp3, ogg (Vorbis) or webm (Opus). */
export function speech(text: string, format: 'wav' | 'mp3' | 'ogg' | 'webm'): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'speech-'));
  try {
    execFileSync('espeak-ng', ['-s', '150', '-w', join(dir, 'a.wav'), text]);
    if (format === 'wav') return readFileSync(join(dir, 'a.wav'));
    const codec = { mp3: ['-c:a', 'libmp3lame'], ogg: ['-c:a', 'libvorbis'], webm: ['-c:a', 'libopus'] }[format];
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-i', join(dir, 'a.wav'), ...codec, join(dir, `a.${format}`)]);
    return readFileSync(join(dir, `a.${format}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export type VideoFormat = 'mp4' | 'webm' | 'mov' | 'mkv';

/**
 * A 640×360 video: each slide's text rendered on white, shown for an equal share of the time,
 * over `sentence` spoken by espeak-ng (no sound track when `sentence` is empty). The mp4 keeps its
 * index at the end, as cameras and ffmpeg write it by default.
 */
export async function spokenVideo(sentence: string, slides: string[], format: VideoFormat): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'video-'));
  try {
    const run = (args: string[]) => execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', ...args]);
    const voice = sentence ? [join(dir, 'voice.wav')] : [];
    if (sentence) execFileSync('espeak-ng', ['-s', '150', '-w', voice[0]!, sentence]);
    const seconds = sentence ? Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', voice[0]!])) + 0.5 : 4;
    const each = (seconds / slides.length).toFixed(2);
    for (const [i, slide] of slides.entries()) {
      const png = await sharp(await renderTextImage([slide], { dpi: 150 })).resize(640, 360, { fit: 'contain', background: '#ffffff' }).png().toBuffer();
      writeFileSync(join(dir, `slide-${i}.png`), png);
    }
    const pictures = slides.flatMap((_, i) => ['-loop', '1', '-framerate', '5', '-t', each, '-i', join(dir, `slide-${i}.png`)]);
    const joined = `${slides.map((_, i) => `[${i}:v]`).join('')}concat=n=${slides.length}:v=1:a=0,format=yuv420p[v]`;
    const codecs = format === 'webm' ? ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus'] : ['-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'aac'];
    const out = join(dir, `video.${format}`);
    run([...pictures, ...voice.flatMap((v) => ['-i', v]), '-filter_complex', joined, '-map', '[v]', ...(sentence ? ['-map', `${slides.length}:a`] : []),
      '-threads', '1', ...codecs, out]);
    return readFileSync(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Word error rate: word-level edit distance over the reference's word count, case and punctuation folded. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').split(/\s+/).filter(Boolean);
  return editDistance(words(reference), words(hypothesis)) / Math.max(1, words(reference).length);
}

/** The share of the expected words (case and punctuation folded) that the text holds somewhere. */
export function wordRecall(expected: string, text: string): number {
  const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9.' ]+|\.(?!\d)/g, ' ').split(/\s+/).filter(Boolean);
  const found = new Set(words(text));
  const wanted = words(expected);
  return wanted.filter((w) => found.has(w)).length / Math.max(1, wanted.length);
}

/** Levenshtein distance between two sequences. */
function editDistance<T>(a: T[], b: T[]): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

export interface DrawnElement {
  type: 'button' | 'input' | 'text' | 'icon';
  text?: string;
  bbox: { x: number; y: number; width: number; height: number };
}

/** A login screen drawn as SVG and rendered by sharp, with the elements it holds. */
export async function loginScreenshot(): Promise<{ png: Buffer; elements: DrawnElement[] }> {
  const elements: DrawnElement[] = [
    { type: 'text', text: 'Sign in to Northwind', bbox: { x: 60, y: 40, width: 330, height: 30 } },
    { type: 'text', text: 'Email', bbox: { x: 60, y: 100, width: 60, height: 20 } },
    { type: 'input', bbox: { x: 60, y: 128, width: 360, height: 40 } },
    { type: 'text', text: 'Password', bbox: { x: 60, y: 190, width: 100, height: 20 } },
    { type: 'input', bbox: { x: 60, y: 218, width: 360, height: 40 } },
    { type: 'button', text: 'Submit', bbox: { x: 60, y: 290, width: 160, height: 44 } },
    { type: 'icon', bbox: { x: 440, y: 40, width: 28, height: 28 } },
  ];
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="520" height="380">
    <rect width="520" height="380" fill="#ffffff"/>
    <text x="60" y="64" font-family="DejaVu Sans" font-size="24" fill="#111111">Sign in to Northwind</text>
    <text x="60" y="116" font-family="DejaVu Sans" font-size="16" fill="#222222">Email</text>
    <rect x="61" y="129" width="358" height="38" fill="#ffffff" stroke="#777777" stroke-width="2"/>
    <text x="60" y="206" font-family="DejaVu Sans" font-size="16" fill="#222222">Password</text>
    <rect x="61" y="219" width="358" height="38" fill="#ffffff" stroke="#777777" stroke-width="2"/>
    <rect x="60" y="290" width="160" height="44" rx="6" fill="#1f5fbf"/>
    <text x="140" y="318" text-anchor="middle" font-family="DejaVu Sans" font-size="18" fill="#ffffff">Submit</text>
    <circle cx="454" cy="54" r="14" fill="#444444"/>
  </svg>`;
  return { png: await sharp(Buffer.from(svg)).png().toBuffer(), elements };
}

/**
 * A photo with blood-coloured splashes drawn over a region (a person's box): the synthetic stand-in
 * for gore that the image guard's tests and evaluation use (no gore image exists in a registry).
 * `cover` is the share of the region the splashes cover, roughly.
 */
export async function bloodied(photo: Buffer, region: { x: number; y: number; width: number; height: number }, cover = 0.3): Promise<Buffer> {
  const { width = 0, height = 0 } = await sharp(photo).metadata();
  const blobs: string[] = [];
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const radius = Math.sqrt((cover * region.width * region.height) / (12 * Math.PI));
  for (let i = 0; i < 12; i++) {
    const cx = region.x + region.width * (0.2 + 0.6 * random()), cy = region.y + region.height * (0.2 + 0.6 * random());
    const shade = 110 + Math.round(60 * random());
    blobs.push(`<ellipse cx="${cx}" cy="${cy}" rx="${radius * (0.7 + 0.6 * random())}" ry="${radius * (0.7 + 0.6 * random())}" fill="rgb(${shade},${Math.round(shade / 12)},${Math.round(shade / 10)})"/>`);
  }
  const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${blobs.join('')}</svg>`);
  return sharp(photo).composite([{ input: svg }]).png().toBuffer();
}
