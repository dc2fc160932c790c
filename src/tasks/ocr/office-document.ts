import { OfficeGenerator, OfficeParser } from 'officeparser';
import sharp from 'sharp';
import { invalidRequest, payloadTooLarge } from '../../errors/service-error.ts';

export interface OfficeDocumentLimits {
  /** `DOCUMENT_MAX_INFLATED_BYTES`, counted on the bytes really inflated (the zip's own sizes may lie). */
  maxInflatedBytes: number;
  /** `DOCUMENT_MAX_IMAGES`: pictures handed back for OCR; the rest are only counted. */
  maxImages: number;
  /** `IMAGE_MAX_PIXELS`: a larger picture is skipped, never decoded. */
  maxPixels: number;
}

export interface OfficeDocument {
  /** The text as Markdown: headings, lists, and tables as Markdown tables. */
  markdown: string;
  /** Raster pictures inside the document, in document order, as PNG for OCR. */
  images: { name: string; png: Buffer }[];
  imagesFound: number;
}

/** Pictures Tesseract reads; vector drawings (emf, wmf, svg) hold no pixels to read. */
const RASTER = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/bmp', 'image/tiff', 'image/webp']);
const LEADING_FRONT_MATTER = /^---\n(?:[A-Za-z_]+: .*\n)*---\n/;

/**
 * An office document (docx, xlsx, pptx, odt, ods, odp, epub, rtf) read by officeparser: its text
 * as Markdown, and its pictures. Runs in a worker process (see DocumentReader).
 */
export async function readOfficeDocument(bytes: Buffer, source: string, limits: OfficeDocumentLimits): Promise<OfficeDocument> {
  let ast;
  try {
    ast = await OfficeParser.parseOffice(bytes, {
      extractAttachments: true,
      decompressionLimits: { maxUncompressedBytes: limits.maxInflatedBytes, maxZipEntries: 2000, maxTableCells: 100_000 },
    });
  } catch (err) {
    const why = (err as Error).message;
    if (/limit exceeded/i.test(why)) {
      throw payloadTooLarge('document_too_large', `${source} inflates to more than ${limits.maxInflatedBytes} bytes (DOCUMENT_MAX_INFLATED_BYTES): refused.`, source);
    }
    throw invalidRequest(`${source} is not a readable document: ${why}`, 'invalid_content', source);
  }
  const pictures = (ast.attachments ?? []).filter((a) => a.type === 'image' && RASTER.has(a.mimeType) && a.data);
  const images = [];
  for (const picture of pictures.slice(0, limits.maxImages)) {
    const png = await asPng(Buffer.from(picture.data, 'base64'), limits.maxPixels);
    if (png) images.push({ name: picture.name, png });
  }
  return { markdown: await markdownOf(ast), images, imagesFound: pictures.length };
}

type Ast = Awaited<ReturnType<typeof OfficeParser.parseOffice>>;

/**
 * The document as Markdown; a spreadsheet's sheets and a presentation's slides each under a heading
 * that names it (the generator alone separates them with bare rules, and drops sheet names).
 */
async function markdownOf(ast: Ast): Promise<string> {
  const headed = ast.content.length > 0 && ast.content.every((node) => node.type === 'sheet' || node.type === 'slide');
  const parts = headed ? ast.content.map((node) => ({ heading: headingOf(node), ast: { ...ast, content: [node] } })) : [{ heading: '', ast }];
  const texts = [];
  for (const part of parts) {
    const { value } = await OfficeGenerator.generate(part.ast, 'md', { includeImages: false, includeFormatting: false, generateIds: false, ignoreInternalLinks: true });
    const body = String(value).replace(LEADING_FRONT_MATTER, '').replace(/^(\s*---\s*\n)+/, '').replace(/\n{3,}/g, '\n\n').trim();
    texts.push(part.heading ? `${part.heading}\n\n${body}` : body);
  }
  return texts.join('\n\n').trim();
}

function headingOf(node: Ast['content'][number]): string {
  const { sheetName, slideNumber } = (node.metadata ?? {}) as { sheetName?: string; slideNumber?: number };
  return node.type === 'sheet' ? `## Sheet: ${sheetName ?? ''}` : `## Slide ${slideNumber ?? ''}`;
}

/** A picture Tesseract can read, or nothing for one that is broken or too large to decode. */
async function asPng(bytes: Buffer, maxPixels: number): Promise<Buffer | undefined> {
  try {
    return await sharp(bytes, { limitInputPixels: maxPixels }).png().toBuffer();
  } catch {
    return undefined;
  }
}
