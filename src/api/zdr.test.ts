import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import type { Engine } from '../engines/engine.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { dataUrl } from '../testing/fixtures.ts';
import { hello, postCompletion, startTestServer } from '../testing/test-server.ts';

/** Installed things, not written by the service: the Python environments (.venv*) among them. */
const SKIP = new Set(['node_modules', '.git', 'models', 'fixtures']);
const skipped = (name: string) => SKIP.has(name) || name.startsWith('.venv');

/** Files under `root` changed since `since` whose bytes hold `needle`. */
function filesHolding(root: string, needle: string, since: number): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return; // another process's private directory
    }
    for (const name of names) {
      if (skipped(name)) continue;
      const path = join(dir, name);
      try {
        const stat = statSync(path);
        if (stat.isDirectory()) walk(path);
        else if (stat.isFile() && stat.mtimeMs >= since && stat.size < 20_000_000 && readFileSync(path).includes(needle)) found.push(path);
      } catch {
        // gone meanwhile
      }
    }
  };
  walk(root);
  return found;
}

it('x-service-zdr: the request and its answer are written to no log, store or file', { timeout: 300_000 }, async () => {
  const since = Date.now() - 1000;
  const secret = `zdr-${process.pid}-${since}`;
  const echo = createScriptedEngine(echoScript);
  const engine: Engine = {
    description: 'echoes, or fails quoting the request',
    async *generate(request) {
      const text = request.messages.at(-1)?.content ?? '';
      if (text.includes('fail')) throw new Error(`cannot answer "${text}"`);
      yield* echo.generate(request);
    },
  };
  const server = await startTestServer({ engine });
  // The file walks below can outlast a keep-alive connection: the control runs on a server of its own.
  let control: Awaited<ReturnType<typeof startTestServer>> | undefined;
  try {
    const zdr = { 'x-service-zdr': 'true' };
    const withFile = {
      ...hello,
      messages: [{ role: 'user', content: [
        { type: 'text', text: `please repeat ${secret}` },
        { type: 'file', file: { filename: 'note.txt', file_data: dataUrl('text/plain', Buffer.from(`the note says ${secret}`)) } },
      ] }],
    };
    const answered = await postCompletion(server.baseUrl, withFile, zdr);
    assert.equal(answered.status, 200);
    assert.match(await answered.text(), new RegExp(secret));
    const failed = await postCompletion(server.baseUrl, { ...hello, messages: [{ role: 'user', content: `fail ${secret}` }] }, zdr);
    assert.equal(failed.status, 500);
    const requestId = failed.headers.get('x-request-id')!;

    const logs = JSON.stringify(server.logged.map((line) => line.map(String)));
    assert.match(logs, new RegExp(requestId), 'the failure is logged, as metadata');
    assert.doesNotMatch(logs, new RegExp(secret));
    assert.deepEqual(filesHolding(tmpdir(), secret, since), []);
    assert.deepEqual(filesHolding(process.cwd(), secret, since), []);

    // Without ZDR the same failure is logged in full and the answer cached: the checks above could fail.
    control = await startTestServer({ engine });
    await postCompletion(control.baseUrl, { ...hello, messages: [{ role: 'user', content: `fail ${secret}` }] });
    assert.match(JSON.stringify(control.logged.map((line) => line.map(String))), new RegExp(secret));
    await (await postCompletion(control.baseUrl, withFile)).text();
    assert.equal(((await (await postCompletion(control.baseUrl, withFile, zdr)).json()) as { vcache: boolean }).vcache, true);
  } finally {
    await Promise.all([server.close(), control?.close()]);
  }
});
