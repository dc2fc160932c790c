import type { OcrDocument, OcrPage } from '../../contract/wire-types.ts';
import { type Attachment, extensionOf } from '../../inputs/attachments.ts';
import { attachmentsFor, frameTime, type Task } from '../task.ts';
import sharp from 'sharp';
import type { DocumentReader } from './document-reader.ts';
import type { PdfReader } from './pdf-reader.ts';
import type { ReadImage, TesseractReader } from './tesseract-reader.ts';

interface ReadDocument {
  pages: OcrPage[];
  document: OcrDocument;
}

/**
 * Text from images and video frames (Tesseract), PDFs (a page's own text layer where it has one,
 * OCR of the rendered page where it has none) and office documents (their text as Markdown, and
 * OCR of their pictures). `documents` says how much of each PDF or office document was read.
 */
export function createOcrTask(reader: TesseractReader, pdfs: PdfReader, offices: DocumentReader): Task {
  return {
    name: 'ocr',
    async run(input) {
      const readable = attachmentsFor('ocr', input, ['image', 'pdf', 'document'], 'an image, a video, a PDF or a document');
      const pages: OcrPage[] = [];
      const documents: OcrDocument[] = [];
      for (const attachment of readable) {
        if (attachment.kind === 'image') {
          pages.push({ source: attachment.param, page: attachment.frame?.number ?? 1, ...frameTime(attachment), method: 'ocr', ...(await reader.read(attachment.bytes, input.caller)) });
        } else {
          const read = attachment.kind === 'pdf' ? await readPdf(attachment, reader, pdfs, input.caller) : await readOffice(attachment, reader, offices, input.caller);
          pages.push(...read.pages);
          documents.push(read.document);
        }
      }
      const text = pages.map((p) => p.text).filter(Boolean).join('\n\n');
      return { name: 'ocr', result: { text, pages, ...(documents.length ? { documents } : {}) } };
    },
  };
}

async function readPdf(attachment: Attachment, reader: TesseractReader, pdfs: PdfReader, caller: string | undefined): Promise<ReadDocument> {
  const source = attachment.param;
  const layer = await pdfs.textLayer(attachment.bytes, source, caller);
  const pages: OcrPage[] = [];
  for (const p of layer.pages) {
    if (p.text.trim() !== '') {
      pages.push({ source, page: p.page, method: 'text_layer', width: p.width, height: p.height, text: p.text, confidence: 1, lines: p.lines });
      continue;
    }
    const image = await pdfs.renderPage(attachment.bytes, p);
    const read = (await isBlank(image)) ? await blankPage(image) : await reader.read(image, caller);
    pages.push({ source, page: p.page, method: 'ocr', ...read });
  }
  return { pages, document: { source, format: 'pdf', page_count: layer.pageCount, pages_read: layer.pages.length } };
}

/** Page 1 is the document's text; each picture in it is a further page, read by OCR. */
async function readOffice(attachment: Attachment, reader: TesseractReader, offices: DocumentReader, caller: string | undefined): Promise<ReadDocument> {
  const source = attachment.param;
  const office = await offices.read(attachment.bytes, source, caller);
  const pages: OcrPage[] = [{ source, page: 1, method: 'document', width: 0, height: 0, text: office.markdown, confidence: 1, lines: [] }];
  for (const [i, image] of office.images.entries()) {
    pages.push({ source, page: i + 2, picture: image.name, method: 'ocr', ...(await reader.read(image.png, caller)) });
  }
  const format = extensionOf(attachment.mime);
  return {
    pages,
    document: { source, ...(isFormat(format) ? { format } : {}), page_count: 1 + office.imagesFound, pages_read: pages.length },
  };
}

const FORMATS = ['docx', 'xlsx', 'pptx', 'odt', 'ods', 'odp', 'epub', 'rtf'] as const;
const isFormat = (format: string): format is (typeof FORMATS)[number] => (FORMATS as readonly string[]).includes(format);

/** A page of one colour holds no text: Tesseract need not spend seconds to say so. */
async function isBlank(image: Buffer): Promise<boolean> {
  const { channels } = await sharp(image).stats();
  return channels.every((c) => c.max - c.min <= 8);
}

async function blankPage(image: Buffer): Promise<ReadImage> {
  const { width = 0, height = 0 } = await sharp(image).metadata();
  return { width, height, text: '', confidence: 1, lines: [] };
}
