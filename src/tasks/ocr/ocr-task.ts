import type { components } from '../../../generated/openapi.ts';
import { invalidRequest } from '../../http/errors.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import { attachmentsFor, type Task } from '../task.ts';
import { readTextLayer, renderPages } from './pdf-reader.ts';
import type { TesseractReader } from './tesseract-reader.ts';

type OcrPage = components['schemas']['OcrPage'];

/**
 * Text from images (Tesseract) and PDFs: a page's own text layer where it has one, and OCR of
 * the rendered page where it has none (a scan).
 */
export function createOcrTask(reader: TesseractReader): Task {
  return {
    name: 'ocr',
    async run(input) {
      const readable = attachmentsFor('ocr', input, ['image', 'pdf'], 'an image or a PDF');
      const pages: OcrPage[] = [];
      for (const attachment of readable) pages.push(...(await readAttachment(attachment, reader)));
      return { name: 'ocr', result: { text: pages.map((p) => p.text).filter(Boolean).join('\n\n'), pages } };
    },
  };
}

async function readAttachment(attachment: Attachment, reader: TesseractReader): Promise<OcrPage[]> {
  const source = attachment.param;
  if (attachment.kind === 'image') {
    const read = await reader.read(attachment.bytes);
    return [{ source, page: 1, method: 'ocr', ...read }];
  }
  let layer;
  try {
    layer = await readTextLayer(attachment.bytes);
  } catch (err) {
    throw invalidRequest(`${source} is not a readable PDF: ${(err as Error).message}`, 'invalid_content', source);
  }
  const scanned = layer.filter((p) => p.text.trim() === '').map((p) => p.page);
  const rendered = await renderPages(attachment.bytes, scanned);
  const pages: OcrPage[] = [];
  for (const p of layer) {
    const image = rendered.get(p.page);
    if (image) {
      const read = await reader.read(image);
      pages.push({ source, page: p.page, method: 'ocr', ...read });
    } else {
      pages.push({ source, page: p.page, method: 'text_layer', width: p.width, height: p.height, text: p.text, confidence: 1, lines: p.lines });
    }
  }
  return pages;
}
