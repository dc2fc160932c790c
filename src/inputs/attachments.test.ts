import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../errors/service-error.ts';
import { dataUrl, renderTextImage, textPdf } from '../testing/fixtures.ts';
import { hugePng } from '../testing/hostile-inputs.ts';
import { testAttachmentLimits } from '../testing/attachment-limits.ts';
import { parseDataUrl, resolveAttachments } from './attachments.ts';

const limits = testAttachmentLimits({ inlineMaxBytes: 200_000, imageMaxPixels: 1_000_000, fetch: { maxBytes: 1000, timeoutMs: 1000, maxRedirects: 1, allowLoopback: false } });
const image = (url: string) => [{ role: 'user' as const, content: [{ type: 'image_url' as const, image_url: { url } }] }];
const file = (filename: string, file_data: string) => [{ role: 'user' as const, content: [{ type: 'file' as const, file: { filename, file_data } }] }];
const rejects = (code: string, status = 400) => (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code;

describe('resolveAttachments', () => {
  it('decodes images and files whose declared type, name and content agree', async () => {
    const png = await renderTextImage(['hi']);
    const pdf = await textPdf(['hi']);
    const [a, b] = await resolveAttachments([...image(dataUrl('image/png', png)), ...file('report.pdf', dataUrl('application/pdf', pdf))], limits);
    assert.deepEqual([a!.kind, a!.mime, a!.bytes.equals(png)], ['image', 'image/png', true]);
    assert.deepEqual([b!.kind, b!.mime, b!.filename, b!.param], ['pdf', 'application/pdf', 'report.pdf', 'messages[1].content[0]']);
  });

  it('refuses bad base64, a mismatched type, an unsupported type, and an oversized file', async () => {
    const png = await renderTextImage(['hi']);
    await assert.rejects(resolveAttachments(image('data:image/png;base64,@@@='), limits), rejects('invalid_content'));
    await assert.rejects(resolveAttachments(image('data:image/png,notbase64'), limits), rejects('invalid_content'));
    await assert.rejects(resolveAttachments(image(dataUrl('image/jpeg', png)), limits), rejects('invalid_content'));
    await assert.rejects(resolveAttachments(file('notes.txt', dataUrl('application/pdf', png)), limits), rejects('invalid_content'));
    await assert.rejects(resolveAttachments(file('a.exe', dataUrl('application/x-msdownload', Buffer.from('MZ'))), limits), rejects('unsupported_content'));
    await assert.rejects(resolveAttachments(image(dataUrl('image/png', Buffer.alloc(300_000))), limits), rejects('file_too_large', 413));
    const truncated = png.subarray(0, 60); // a PNG's signature and header, then nothing
    await assert.rejects(resolveAttachments(image(dataUrl('image/png', truncated)), limits), rejects('invalid_content'));
  });

  it('accepts text files that are text, and refuses binary ones declared as text', async () => {
    const [text] = await resolveAttachments(file('notes.txt', dataUrl('text/plain', Buffer.from('café notes'))), limits);
    assert.equal(text!.kind, 'text');
    await assert.rejects(resolveAttachments(file('notes.txt', dataUrl('text/plain', await textPdf(['x']))), limits), rejects('invalid_content'));
  });

  it('fetches URLs through the safe fetcher only', async () => {
    await assert.rejects(resolveAttachments(image('http://127.0.0.1/a.png'), limits), rejects('url_not_allowed'));
  });
});

describe('image size', () => {
  it('refuses an image whose header declares more pixels than the limit, naming it, without decoding it', async () => {
    const bomb = await hugePng(16_000, 16_000);
    await assert.rejects(resolveAttachments(image(dataUrl('image/png', bomb)), limits), (e: unknown) =>
      rejects('image_too_large', 413)(e) && /16000×16000.*IMAGE_MAX_PIXELS/.test((e as Error).message));
  });

  it('takes an image at the limit', async () => {
    const [a] = await resolveAttachments(image(dataUrl('image/png', await hugePng(1000, 1000))), limits);
    assert.equal(a!.kind, 'image');
  });
});

// The data URL pattern on 100 KB of adversarial input (the timeout only detects a hang).
describe('parseDataUrl on hostile text', { timeout: 60_000 }, () => {
  const cases = {
    'many parameters, no base64 marker': `data:text/plain${';a=b'.repeat(25_000)}`,
    'parameter values full of "=" and no base64 marker': `data:text/plain;a=${'=;b'.repeat(33_000)}`,
    'base64 with a bad character at the end': `data:text/plain;base64,${'A'.repeat(100_000)}!`,
    'a long type': `data:${'a'.repeat(100_000)}`,
  };
  for (const [name, url] of Object.entries(cases)) {
    it(name, () => assert.throws(() => parseDataUrl(url, 'p', 1_000_000), rejects('invalid_content')));
  }
  it('still reads a good one', () => assert.equal(parseDataUrl('data:text/plain;charset=utf-8;base64,aGk=', 'p', 10).bytes.toString(), 'hi'));
});
