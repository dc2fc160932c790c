import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '../contract/wire-types.ts';
import { ServiceError } from '../errors/service-error.ts';
import { lastUserText, normalizeRequest } from './normalize-request.ts';

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

describe('an assistant message with tool_calls and no content (issue 21, finding 2)', () => {
  const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
  const body = (assistant: Record<string, unknown>) => ({
    model: 'service' as const,
    messages: [{ role: 'user', content: 'hi' }, assistant, { role: 'tool', tool_call_id: 'call_1', content: 'done' }],
  }) as never;
  const signal = new AbortController().signal;

  for (const [name, assistant] of [['content absent', { role: 'assistant', tool_calls: [call] }], ['content null', { role: 'assistant', content: null, tool_calls: [call] }]] as const) {
    it(`is read with ${name} as a turn of empty text and its calls`, () => {
      const turn = normalizeRequest(body(assistant), signal).messages[1]!;
      assert.deepEqual([turn.role, turn.content, turn.toolCalls], ['assistant', '', [call]]);
    });
  }

  it('is refused with neither content nor tool_calls, the message naming the rule', () => {
    assert.throws(() => normalizeRequest(body({ role: 'assistant' }), signal),
      (e: unknown) => e instanceof ServiceError && e.status === 400 && /messages\[1\] has no content.*assistant message with tool_calls/.test(e.message));
  });
});
