import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { compileSchema } from '../../engines/json-schema.ts';
import { URL_IN_TEXT } from './scraper-task.ts';
import { createScriptedEngine } from '../../engines/scripted-engine.ts';
import type { Engine, GenerationRequest, TokenUsage } from '../../engines/engine.ts';
import { startFakeUpstream } from '../../testing/fake-upstream.ts';
import { taskInput } from '../../testing/task-input.ts';
import { createScraperTask } from './scraper-task.ts';
import { PageReader } from './page-reader.ts';
import { loadConfig } from '../../config.ts';
import { scraperLimitsOf } from '../../wiring/create-tasks.ts';
import { manyLinksHtml, nestedTablesHtml } from '../../testing/hostile-inputs.ts';

const PAGE = `<!doctype html><html><head><title>Northwind – Prices</title>
<meta name="description" content="Price list"><meta property="og:title" content="Prices"><style>p{}</style></head>
<body><h1>Price list</h1><p>Updated weekly.</p><script>track()</script>
<a href="/tea">Tea</a> <a href="https://other.example/coffee">Coffee</a>
<table><tr><th>Item</th><th>Price</th></tr><tr><td>Tea</td><td>3.50</td></tr><tr><td>Coffee</td><td>4.00</td></tr></table>
</body></html>`;
const fetchLimits = { maxBytes: 100_000, timeoutMs: 2000, maxRedirects: 2, allowLoopback: true };
const input = (text: string, output: GenerationRequest['output'] = { kind: 'text' }) => taskInput({ text, output });
const limits = scraperLimitsOf(loadConfig({})); // the defaults
const pages = new PageReader(limits);

describe('scraper task', () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all([...closers.map((c) => c()), pages.close()]));

  it('returns the title, text, links, tables and metadata of the page', async () => {
    const site = await startFakeUpstream((_b, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE));
    closers.push(site.close);
    const never = createScriptedEngine(() => { throw new Error('no extraction was asked for'); });
    const entry = await createScraperTask({ engine: never, fetchLimits, pages }).run(input(`${site.baseUrl}/prices`));
    if (entry.name !== 'scraper') return assert.fail();
    const r = entry.result;
    assert.equal(r.title, 'Northwind – Prices');
    assert.match(r.text, /^Price list\nUpdated weekly\./);
    assert.doesNotMatch(r.text, /track\(\)/);
    assert.deepEqual(r.links, [{ text: 'Tea', url: new URL('/tea', site.baseUrl).toString() }, { text: 'Coffee', url: 'https://other.example/coffee' }]);
    assert.deepEqual(r.tables, [{ headers: ['Item', 'Price'], rows: [['Tea', '3.50'], ['Coffee', '4.00']] }]);
    assert.deepEqual(r.metadata, { description: 'Price list', 'og:title': 'Prices' });
    assert.equal('extracted' in r, false);
  });

  it('extracts structured data through the language model when a schema is given', async () => {
    const site = await startFakeUpstream((_b, res) => res.writeHead(200).end(PAGE));
    closers.push(site.close);
    let seen: GenerationRequest | undefined;
    const engine = createScriptedEngine((request) => {
      seen = request;
      return [{ type: 'content', text: '{"items":[{"name":"Tea","price":3.5}]}' }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1 } }];
    });
    const schema = compileSchema({ type: 'object', properties: { items: { type: 'array' } } }, 'response_format');
    const entry = await createScraperTask({ engine, fetchLimits, pages }).run(input(`${site.baseUrl}/ list the prices`, { kind: 'json', name: 'prices', schema }));
    if (entry.name !== 'scraper') return assert.fail();
    assert.deepEqual(entry.result.extracted, { items: [{ name: 'Tea', price: 3.5 }] });
    assert.match(seen!.messages[1]!.content, /list the prices[\s\S]*Tea 3\.50/);
    assert.equal(seen!.output.kind, 'json');
  });

  it('reports the extraction tokens generated before its caller left, though the pass never ended', async () => {
    const site = await startFakeUpstream((_b, res) => res.writeHead(200).end(PAGE));
    closers.push(site.close);
    const caller = new AbortController();
    const engine: Engine = {
      description: 'an engine that stops when its caller leaves, as the local one does (it throws the abort)',
      countTokens: (text) => text.split(/\s+/).filter(Boolean).length,
      async *generate(request) {
        yield { type: 'content', text: '{"items": ' };
        yield { type: 'content', text: '[ "Tea"' };
        caller.abort(new Error('client disconnected'));
        throw request.signal.reason;
      },
    };
    const heard: TokenUsage[] = [];
    await assert.rejects(createScraperTask({ engine, fetchLimits, pages }).run(taskInput({
      text: `${site.baseUrl}/ list the prices`, signal: caller.signal, onTokens: (usage) => heard.push(usage),
    })), /client disconnected/);
    assert.equal(heard.length, 1, 'the tokens of the cut pass are reported');
    assert.equal(heard[0]!.completionTokens, 3, 'what it generated: {"items": [ "Tea" (three words by its tokenizer)');
    assert.ok(heard[0]!.promptTokens > 10, `the page it read (${heard[0]!.promptTokens})`);
  });
});

// The URL pattern on 100 KB of adversarial user text (the timeout only detects a hang).
describe('URL_IN_TEXT on hostile text', { timeout: 60_000 }, () => {
  for (const [name, text, found] of [
    ['"http:/" repeated', 'http:/'.repeat(17_000), undefined],
    ['one URL of 100 KB', `see https://${'a'.repeat(100_000)}`, `https://${'a'.repeat(100_000)}`],
    ['"https://" repeated', 'https://'.repeat(12_500), 'https://'.repeat(12_500)],
  ] as const) {
    it(name, () => {
      const match = URL_IN_TEXT.exec(text)?.[0];
      if (found !== undefined) assert.equal(match, found);
      else assert.ok(match === undefined || match.length <= text.length);
    });
  }
});

// A hostile page is parsed away from the event loop, and what it makes is bounded by the limits.
describe('scraper task on hostile pages', { timeout: 300_000 }, () => {
  after(() => pages.close());
  const never = createScriptedEngine(() => { throw new Error('no extraction was asked for'); });
  const task = createScraperTask({ engine: never, fetchLimits, pages });

  /** The page's result, and how many times the event loop turned while the task read it. */
  async function readTurning(html: Buffer) {
    let turns = 0;
    let reading = true;
    const turn = () => {
      if (!reading) return;
      turns++;
      setImmediate(turn);
    };
    setImmediate(turn);
    const attachment = { kind: 'text' as const, mime: 'text/html', bytes: html, param: 'messages[0].content[0]', filename: 'page.html' };
    try {
      const entry = await task.run(taskInput({ attachments: [attachment] }));
      if (entry.name !== 'scraper') assert.fail(entry.name);
      return { result: entry.result, turns };
    } finally {
      reading = false;
    }
  }

  it('2 million links: at most SCRAPER_MAX_LINKS come back, and the event loop turns while the page is parsed', async () => {
    const { result, turns } = await readTurning(manyLinksHtml(2_000_000));
    assert.equal(result.links.length, limits.maxLinks);
    assert.deepEqual(result.links[0], { text: 'x', url: '/x' }); // an attached page has no URL to resolve against
    assert.ok(turns > 0, `${turns} turns`);
  });

  it('100,000 nested tables: at most SCRAPER_MAX_TABLES tables and SCRAPER_MAX_TABLE_CELLS cells, text within its bound', async () => {
    const { result, turns } = await readTurning(nestedTablesHtml(100_000));
    assert.equal(result.tables.length, limits.maxTables);
    const cells = result.tables.reduce((n, t) => n + t.headers.length + t.rows.reduce((m, r) => m + r.length, 0), 0);
    assert.ok(cells > 0 && cells <= limits.maxTableCells, `${cells} cells`);
    assert.ok(result.text.length > 0 && result.text.length <= limits.maxTextChars, `${result.text.length} characters`);
    assert.ok(turns > 0, `${turns} turns`);
  });

  it('100,000 <meta> entries: at most SCRAPER_MAX_METADATA', async () => {
    const metas = Array.from({ length: 100_000 }, (_, i) => `<meta name="m${i}" content="${i}">`).join('');
    const { result } = await readTurning(Buffer.from(`<html><head>${metas}</head><body>hi</body></html>`));
    assert.equal(Object.keys(result.metadata).length, limits.maxMetadata);
    assert.equal(result.metadata.m0, '0');
  });
});
