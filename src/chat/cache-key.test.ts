import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ChatCompletionRequest } from '../contract/wire-types.ts';
import { createHash } from 'node:crypto';
import type { ResolvedAttachment } from '../inputs/attachments.ts';
import { cacheKeyOf } from './cache-key.ts';
import type { RequestContext } from './request-context.ts';

const sentDigest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const VIDEO = 'messages[0].content[1]';
const IMAGE = 'messages[0].content[2]';
const body = {
  model: 'service',
  messages: [{ role: 'user', content: [
    { type: 'text', text: '<task>ocr</task>' },
    { type: 'file', file: { filename: 'clip.mp4', file_data: 'data:video/mp4;base64,AAAA' } },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
  ] }],
} as ChatCompletionRequest;

/** A request's attachments as resolved: a video read as two frames and a sound track, then an image. */
function resolved(sent: { video: string; image: string }): ResolvedAttachment[] {
  const video = { param: VIDEO, filename: 'clip.mp4', sent: sentDigest(Buffer.from(sent.video)) };
  return [
    { kind: 'image', mime: 'image/png', bytes: Buffer.from('first frame'), frame: { number: 1, seconds: 0 }, ...video },
    { kind: 'image', mime: 'image/png', bytes: Buffer.from('THE END'), frame: { number: 2, seconds: 2 }, ...video },
    { kind: 'audio', mime: 'audio/wav', bytes: Buffer.from('silence'), ...video },
    { kind: 'image', mime: 'image/png', bytes: Buffer.from(sent.image), param: IMAGE, sent: sentDigest(Buffer.from(sent.image)) },
  ];
}

const keyOf = (attachments: ResolvedAttachment[]) => cacheKeyOf({
  body,
  caller: { keyId: 'k1' },
  flags: { bypassMoa: false },
  generation: { parallelToolCalls: true, temperature: 1, topP: 1, stop: [] },
  attachments: async () => attachments,
} as unknown as RequestContext, 'global');

describe('the cache key', () => {
  it('is the same for the same bytes sent', async () => {
    assert.equal(await keyOf(resolved({ video: 'A', image: 'I' })), await keyOf(resolved({ video: 'A', image: 'I' })));
  });

  it('differs when any one part the caller sent differs, though the frames read from it are the same', async () => {
    const base = await keyOf(resolved({ video: 'ALPHA video', image: 'I' }));
    assert.notEqual(await keyOf(resolved({ video: 'BRAVO video', image: 'I' })), base, 'another video, same frames read');
    assert.notEqual(await keyOf(resolved({ video: 'ALPHA video', image: 'J' })), base, 'another image');
  });

  it('counts every attachment of a part: lists that differ in any one entry give different keys', async () => {
    const base = resolved({ video: 'A', image: 'I' });
    const keys = new Set([await keyOf(base)]);
    for (const [i, a] of base.entries()) {
      const changed = base.map((b, j) => (j === i ? { ...a, sent: sentDigest(Buffer.from(`changed ${i}`)) } : b));
      keys.add(await keyOf(changed));
    }
    assert.equal(keys.size, base.length + 1);
  });
});
