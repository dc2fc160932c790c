import type { OcrDocument, OcrPage } from '../../contract/wire-types.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import { attachmentsFor, type Task } from '../task.ts';
import sharp from 'sharp';
import type { PdfReader } from './pdf-reader.ts';
import type { ReadImage, TesseractReader } from './tesseract-reader.ts';


/**
 * Text from images (Tesseract) and PDFs: a page's own text layer where it has one, and OCR of
 * the rendered page where it has none (a scan). A PDF is read up to `PDF_MAX_PAGES`; `documents`
 * says how many of its pages were read.
 */
export function createOcrTask(reader: TesseractReader, pdfs: PdfReader): Task {
  return {
    name: 'ocr',
    async run(input) {
      const readable = attachmentsFor('ocr', input, ['image', 'pdf'], 'an image or a PDF');
      const pages: OcrPage[] = [];
      const documents: OcrDocument[] = [];
      for (const attachment of readable) {
        if (attachment.kind === 'image') {
          pages.push({ source: attachment.param, page: 1, method: 'ocr', ...(await reader.read(attachment.bytes)) });
        } else {
          const pdf = await readPdf(attachment, reader, pdfs);
          pages.push(...pdf.pages);
          documents.push(pdf.document);
        }
      }
      const text = pages.map((p) => p.text).filter(Boolean).join('\n\n');
      return { name: 'ocr', result: { text, pages, ...(documents.length ? { documents } : {}) } };
    },
  };
}

async function readPdf(attachment: Attachment, reader: TesseractReader, pdfs: PdfReader): Promise<{ pages: OcrPage[]; document: OcrDocument }> {
  const source = attachment.param;
  const layer = await pdfs.textLayer(attachment.bytes, source);
  const pages: OcrPage[] = [];
  for (const p of layer.pages) {
    if (p.text.trim() !== '') {
      pages.push({ source, page: p.page, method: 'text_layer', width: p.width, height: p.height, text: p.text, confidence: 1, lines: p.lines });
      continue;
    }
    const image = await pdfs.renderPage(attachment.bytes, p);
    const read = (await isBlank(image)) ? await blankPage(image) : await reader.read(image);
    pages.push({ source, page: p.page, method: 'ocr', ...read });
  }
  return { pages, document: { source, page_count: layer.pageCount, pages_read: layer.pages.length } };
}

/** A page of one colour holds no text: Tesseract need not spend seconds to say so. */
async function isBlank(image: Buffer): Promise<boolean> {
  const { channels } = await sharp(image).stats();
  return channels.every((c) => c.max - c.min <= 8);
}

async function blankPage(image: Buffer): Promise<ReadImage> {
  const { width = 0, height = 0 } = await sharp(image).metadata();
  return { width, height, text: '', confidence: 1, lines: [] };
}
