import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ServiceError } from '../../errors/service-error.ts';
import { startFakeUpstream } from '../../testing/fake-upstream.ts';
import { taskInput } from '../../testing/task-input.ts';
import { createBraveProvider, createSearxngProvider } from './search-provider.ts';
import { createWebSearchTask } from './web-search-task.ts';

const input = (text: string) => taskInput({ text });

describe('web_search task', () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all(closers.map((c) => c())));

  it('searches a SearXNG instance through its JSON API', async () => {
    let asked = '';
    const searxng = await startFakeUpstream((_body, res, req) => {
      asked = req.url ?? '';
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({
        results: [{ title: 'Paris weather', url: 'https://weather.example/paris', content: 'Cloudy, 18 °C' }],
      }));
    });
    closers.push(searxng.close);
    const entry = await createWebSearchTask(createSearxngProvider(searxng.baseUrl, 2000)).run(input('weather in Paris'));
    assert.match(asked, /\/search\?q=weather\+in\+Paris&format=json/);
    assert.deepEqual(entry, {
      name: 'web_search',
      result: { query: 'weather in Paris', provider: 'searxng', results: [{ title: 'Paris weather', url: 'https://weather.example/paris', snippet: 'Cloudy, 18 °C' }] },
    });
  });

  it('reads the Brave Search API with its token', async () => {
    let token: string | undefined;
    const brave = await startFakeUpstream((_b, res, req) => {
      token = req.headers['x-subscription-token'] as string;
      res.writeHead(200).end(JSON.stringify({ web: { results: [{ title: 'T', url: 'https://t.example', description: 'D' }] } }));
    });
    closers.push(brave.close);
    const entry = await createWebSearchTask(createBraveProvider('secret', 2000, brave.baseUrl)).run(input('t'));
    assert.equal(token, 'secret');
    assert.equal(entry.name === 'web_search' && entry.result.results[0]?.snippet, 'D');
  });

  it('answers 503 saying how to configure a provider when there is none, or when it is down', async () => {
    await assert.rejects(createWebSearchTask(undefined).run(input('q')),
      (e: unknown) => e instanceof ServiceError && e.status === 503 && /SEARXNG_URL/.test(e.message));
    await assert.rejects(createWebSearchTask(createSearxngProvider('http://127.0.0.1:9', 500)).run(input('q')),
      (e: unknown) => e instanceof ServiceError && e.status === 503 && e.code === 'search_unavailable');
  });
});
