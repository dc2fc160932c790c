import yauzl from 'yauzl';
import { invalidRequest, payloadTooLarge } from '../errors/service-error.ts';

/** Real office documents hold tens to hundreds of parts; thousands only make a parser slow. */
const MAX_ENTRIES = 2000;

/**
 * An office document is a zip, and a zip of 100 KB may inflate to gigabytes. Its central directory
 * says what every part will inflate to, read here without inflating anything: too many parts, or
 * more than `maxInflatedBytes` in all, is refused before any parser sees the file. (A directory
 * that lies about the sizes is caught later: the reader counts the bytes it really inflates.)
 */
export async function checkZipLimits(bytes: Buffer, param: string, what: string, maxInflatedBytes: number): Promise<void> {
  const unreadable = (err: Error) => invalidRequest(`${param} is not a readable ${what}: ${err.message}`, 'invalid_content', param);
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(bytes, { lazyEntries: true }, (err, opened) => (err ? reject(unreadable(err)) : resolve(opened))));
  if (zip.entryCount > MAX_ENTRIES) {
    zip.close();
    throw payloadTooLarge('document_too_large', `${param} holds ${zip.entryCount} parts, over the limit of ${MAX_ENTRIES}.`, param);
  }
  let inflated = 0;
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      inflated += entry.uncompressedSize;
      if (inflated > maxInflatedBytes) {
        zip.close();
        reject(payloadTooLarge('document_too_large',
          `${param} would inflate to more than ${maxInflatedBytes} bytes (DOCUMENT_MAX_INFLATED_BYTES): refused unread.`, param));
      } else {
        zip.readEntry();
      }
    });
    zip.on('end', resolve);
    zip.on('error', (err: Error) => reject(unreadable(err)));
    zip.readEntry();
  });
}
