import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { writeEventStream } from './sse.ts';

/** Serves one stream of `items` at /, and answers its base URL, a closer and the response's `write` calls so far. */
async function serve(items: () => AsyncIterable<unknown>) {
  const app = express();
  const writes: string[] = [];
  app.get('/', async (req, res) => {
    const write = res.write.bind(res) as (chunk: unknown) => boolean;
    res.write = ((chunk: unknown) => (writes.push(String(chunk)), write(chunk))) as typeof res.write;
    await writeEventStream(req, res, items(), new AbortController().signal, console);
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close(), writes };
}

describe('the SSE writer', () => {
  it('sends each event as soon as it is ready: writes coalesced within a turn are never held for the next event', async () => {
    let received!: () => void;
    const clientHasFirst = new Promise<void>((r) => (received = r));
    // The second event is made only once the client has read the first: a writer that held
    // events back until more came would never let this stream finish (the test would hang).
    const { url, close } = await serve(async function* () {
      yield { n: 1 };
      await clientHasFirst;
      yield { n: 2 };
    });
    try {
      const response = await fetch(url);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      while (!text.includes('"n":1')) text += (await reader.read()).value ?? '';
      received();
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
      assert.equal(text, 'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
    } finally {
      close();
    }
  });

  it('sends events made together in one turn in one piece, in order', async () => {
    const { url, close, writes } = await serve(async function* () {
      for (let n = 1; n <= 50; n++) yield { n };
    });
    try {
      const text = await (await fetch(url)).text();
      const ns = [...text.matchAll(/"n":(\d+)/g)].map((m) => Number(m[1]));
      assert.deepEqual(ns, Array.from({ length: 50 }, (_, i) => i + 1));
      assert.ok(text.endsWith('data: [DONE]\n\n'));
      // One write for the turn (and the end with [DONE]), not one per event: each write is a
      // chunk of its own in the chunked encoding and a pass through node's HTTP writer.
      assert.ok(writes.length <= 1, `${writes.length} writes for 50 events made in one turn`);
    } finally {
      close();
    }
  });
});
