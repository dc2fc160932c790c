import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '../contract/wire-types.ts';
import { lastUserText } from './normalize-request.ts';

const file = { type: 'file' as const, file: { filename: 'a.txt', file_data: 'data:text/plain;base64,aGk=' } };

describe('lastUserText', () => {
  it('takes the text parts of the last user message, keeping what the caller wrote word for word', () => {
    const messages: Message[] = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: [{ type: 'text', text: 'what does [image attached] mean?' }, file, { type: 'text', text: 'thanks' }] },
    ];
    assert.equal(lastUserText(messages), 'what does [image attached] mean?\nthanks');
  });

  // 320 KB of an unclosed marker once froze the event loop for 10 s; the timeout only detects a hang.
  it('is linear in the text: 20,000 unclosed "[file attached: " markers after an attachment', { timeout: 60_000 }, () => {
    const text = '[file attached: '.repeat(20_000);
    assert.equal(lastUserText([{ role: 'user', content: [file, { type: 'text', text }] }]), text.trim());
  });
});
