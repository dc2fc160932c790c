// The API reference at /docs (make docs: Redocly build-docs), opened in headless Chromium as a
// reader would: the operation, every error status it answers and the examples must render.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../config.ts';
import { loadContract } from '../contract/openapi-document.ts';
import { startTestServer, type TestServer } from '../testing/test-server.ts';

const { docsFile } = loadConfig({});
const run = promisify(execFile); // not execFileSync: the server answers from this process
const CHROMIUM = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1440,1800', '--virtual-time-budget=15000'];

/** The page's visible text once Chromium has run its scripts, at the operation's route. */
async function renderedText(url: string): Promise<string> {
  const { stdout } = await run('chromium', [...CHROMIUM, '--dump-dom', url], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/g, ' ').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
}

describe('the API reference at /docs', { timeout: 300_000 }, () => {
  let server: TestServer;
  let docs: string;
  before(async () => {
    server = await startTestServer({ docsFile });
    docs = `${server.baseUrl.replace(/\/v1$/, '')}/docs`;
  });
  after(() => server.close());

  it('is served without a key', async () => {
    const res = await fetch(docs);
    assert.equal(res.status, 200, 'built by make docs (the setup builds it)');
    assert.match(res.headers.get('content-type')!, /text\/html/);
  });

  it('renders the operation, every status it answers, and the examples, in Chromium', async () => {
    const operation = (loadContract() as { paths: Record<string, { post: { summary: string; responses: Record<string, unknown> } }> })
      .paths['/chat/completions']!.post;
    const text = await renderedText(`${docs}#/chat/createchatcompletion`);
    assert.ok(text.includes(operation.summary), `"${operation.summary}" is not on the page`);
    const statuses = Object.keys(operation.responses);
    assert.ok(statuses.length >= 8);
    assert.ok(text.includes(`Responses ${statuses.join(' ')}`), `the response list is not ${statuses.join(' ')}`);
    assert.ok(text.includes('A plain answer') && text.includes('"service-1763740800000123"'), 'the response example is not shown');
    assert.ok(text.includes('A plain question'), 'the request example is not shown');
  });

  it('takes a screenshot of it (as make docs keeps in docs/)', async () => {
    const png = join(mkdtempSync(join(tmpdir(), 'docs-shot-')), 'shot.png');
    await run('chromium', [...CHROMIUM, `--screenshot=${png}`, `${docs}#/chat/createchatcompletion`]);
    const bytes = readFileSync(png);
    assert.deepEqual([...bytes.subarray(1, 4)], [...Buffer.from('PNG')]);
    assert.deepEqual([bytes.readUInt32BE(16), bytes.readUInt32BE(20)], [1440, 1800]);
  });
});
