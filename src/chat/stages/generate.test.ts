import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { describe, it } from 'node:test';
import { createUpstreamEngine } from '../../engines/upstream-engine.ts';
import { delta, sendStream, startFakeUpstream } from '../../testing/fake-upstream.ts';
import { renderTextImage } from '../../testing/fixtures.ts';
import { postCompletion, startTestServer } from '../../testing/test-server.ts';

/** A picture served on loopback, as a caller's URL would be. */
async function servePicture(bytes: Buffer) {
  const server = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'image/png' }).end(bytes));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/cat.png`, close: () => server.close() };
}

describe('images and an upstream that sees them (issue 9, finding 5)', () => {
  for (const vision of [true, false]) {
    it(vision ? 'reach a vision upstream as data URLs of the bytes, never as the caller\'s URL' : 'stay out of a text-only upstream (UPSTREAM_VISION=false)', async () => {
      const png = await renderTextImage(['hi']);
      const picture = await servePicture(png);
      const upstream = await startFakeUpstream((_body, res) => sendStream(res, [delta({ role: 'assistant', content: 'a cat' }, 'stop')]));
      const engine = createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 5000, vision });
      const server = await startTestServer({ engine });
      try {
        const res = await postCompletion(server.baseUrl, {
          model: 'service', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: picture.url } }] }],
        }, { 'x-service-bypass-moa': 'true' });
        assert.equal(res.status, 200);
        const sent = JSON.stringify(upstream.requests[0]);
        assert.doesNotMatch(sent, /127\.0\.0\.1/, 'the upstream was given the caller\'s URL');
        const content = (upstream.requests[0]!.messages as { content: unknown }[])[0]!.content;
        if (vision) {
          assert.deepEqual(content, [
            { type: 'text', text: 'What is this?\n[image attached]' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
          ]);
        } else {
          assert.equal(typeof content, 'string');
        }
      } finally {
        await server.close();
        await upstream.close();
        picture.close();
      }
    });
  }

  it('reach the message they came with when a system message is left out (it held only directives)', async () => {
    const png = await renderTextImage(['hi']);
    const upstream = await startFakeUpstream((_body, res) => sendStream(res, [delta({ role: 'assistant', content: 'a cat' }, 'stop')]));
    const engine = createUpstreamEngine({ baseUrl: upstream.baseUrl, model: 'm', timeoutMs: 5000, vision: true });
    const server = await startTestServer({ engine });
    try {
      const picture = { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } };
      const res = await postCompletion(server.baseUrl, {
        model: 'service', messages: [
          { role: 'system', content: ' ' }, // nothing left once trimmed, as a system message of directives alone
          { role: 'user', content: 'Hello' },
          { role: 'assistant', content: 'Hi. Send the picture.' },
          { role: 'user', content: [{ type: 'text', text: 'What is this?' }, picture] },
        ],
      }, { 'x-service-bypass-moa': 'true' });
      assert.equal(res.status, 200, await res.clone().text());
      const sent = upstream.requests[0]!.messages as { role: string; content: unknown }[];
      assert.deepEqual(sent.map((m) => [m.role, Array.isArray(m.content) ? 'with a picture' : 'text']),
        [['user', 'text'], ['assistant', 'text'], ['user', 'with a picture']]);
    } finally {
      await server.close();
      await upstream.close();
    }
  });
});
