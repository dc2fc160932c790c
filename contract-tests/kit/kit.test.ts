// The conformance kit grading three implementations: this service (the real app, its core), a
// minimal correct server, and the same server with each flaw a kit must catch.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createScriptedEngine, echoScript } from '../../src/engines/scripted-engine.ts';
import { startTestServer, TEST_KEY } from '../../src/testing/test-server.ts';
import { type Flaw, GOOD_KEY, startBrokenServer } from './broken-server.ts';
import { writeReport } from './report.ts';
import { runKit } from './run-kit.ts';

const grade = (baseUrl: string, apiKey: string) => runKit({ baseUrl, apiKey, model: 'service', extensions: false, timeoutMs: 60_000 });
const failedRules = (result: Awaited<ReturnType<typeof grade>>) => result.rules.filter((r) => r.status === 'fail').map((r) => r.rule.id);

describe('the conformance kit', { timeout: 300_000 }, () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all(closers.map((close) => close())));

  it('passes this service on every core rule, and writes JUnit, Markdown and HTML', async () => {
    const engine = createScriptedEngine((request) => request.tools.length === 0 || request.messages.at(-1)?.role === 'tool' ? echoScript(request) : [
      { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 9, completionTokens: 6 } },
    ]);
    const server = await startTestServer({ engine });
    closers.push(server.close);
    const result = await grade(server.baseUrl, TEST_KEY);
    assert.deepEqual(result.checks.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`), []);
    assert.ok(result.passed);
    const dir = mkdtempSync(join(tmpdir(), 'kit-report-'));
    writeReport(result, dir);
    assert.match(readFileSync(join(dir, 'junit.xml'), 'utf8'), /<testsuite name="conformance of [^"]+" tests="12" failures="0"/);
    assert.match(readFileSync(join(dir, 'report.md'), 'utf8'), /\| §4\.1 \| stream: true gives .* \| ✅ pass \| stream-done \|/);
    assert.match(readFileSync(join(dir, 'report.md'), 'utf8'), /\| §4\.4 \| .* \| — not applicable \| an extension of this service/);
    assert.match(readFileSync(join(dir, 'report.html'), 'utf8'), /<h1>Conformance of http:\/\/127\.0\.0\.1:\d+\/v1<\/h1>/);
  });

  it('passes a minimal correct OpenAI-compatible server on every core rule', async () => {
    const server = await startBrokenServer();
    closers.push(server.close);
    assert.deepEqual(failedRules(await grade(server.baseUrl, GOOD_KEY)), []);
  });

  const CAUGHT: [Flaw, string[]][] = [
    ['no-done', ['§4.1', '§6.1']],
    ['no-role', ['§6.2']],
    ['wrong-envelope', ['§2.9']],
    ['accepts-bad-key', ['§5.3']],
  ];
  for (const [flaw, rules] of CAUGHT) {
    it(`catches ${flaw}: rules ${rules.join(', ')} fail, with the exchange as evidence`, async () => {
      const server = await startBrokenServer([flaw]);
      closers.push(server.close);
      const result = await grade(server.baseUrl, GOOD_KEY);
      assert.ok(!result.passed);
      for (const rule of rules) assert.ok(failedRules(result).includes(rule), `${rule} not failed: ${failedRules(result).join(', ')}`);
      const failed = result.checks.find((c) => c.status === 'fail')!;
      assert.ok(failed.exchanges.length > 0 && failed.exchanges[0]!.response.length > 0);
      assert.ok(!failed.exchanges.some((e) => e.request.includes(GOOD_KEY)), 'the key is masked in the evidence');
    });
  }

  it('says what it saw: an intermediate chunk without finish_reason is reported as absent, not as having one', async () => {
    const server = await startBrokenServer(['absent-finish-reason']);
    closers.push(server.close);
    const result = await grade(server.baseUrl, GOOD_KEY);
    const check = result.checks.find((c) => c.id === 'stream-chunks')!;
    assert.equal(check.status, 'fail');
    assert.match(check.message, /intermediate chunk 1 of \d+: finish_reason is absent \(the field is missing\), where null is required/);
  });

  it('runs only what --only names and leaves out what --skip names, by id or group, and scores each group', async () => {
    const server = await startBrokenServer(['no-done']);
    closers.push(server.close);
    const only = await runKit({ baseUrl: server.baseUrl, apiKey: GOOD_KEY, model: 'service', extensions: false, timeoutMs: 60_000, only: ['stream-done', 'bad-key'] });
    assert.deepEqual(only.checks.map((c) => [c.id, c.status]), [['stream-done', 'fail'], ['bad-key', 'pass']]);
    assert.deepEqual(only.scores.core, { passed: 1, failed: 1, notOffered: 0, notApplicable: 0, percent: 50 });
    assert.equal(only.scores.compat.percent, null);
    const skipped = await runKit({ baseUrl: server.baseUrl, apiKey: GOOD_KEY, model: 'service', extensions: false, timeoutMs: 60_000, skip: ['stream-done', 'stream-chunks', 'extension'] });
    assert.ok(skipped.checks.length > 0 && skipped.checks.every((c) => !c.id.startsWith('stream-') && c.group !== 'extension'));
    assert.ok(skipped.passed, 'without the stream checks, nothing fails');
    const dir = mkdtempSync(join(tmpdir(), 'kit-report-'));
    writeReport(only, dir);
    const json = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    assert.equal(json.checks[0].status, 'fail');
    assert.equal(json.scores.overall.percent, 50);
    assert.ok(!JSON.stringify(json).includes(GOOD_KEY), 'the key is not in the JSON report');
  });

  it('is a package: packed, installed in a fresh project, run with npx, it grades and writes its report', async () => {
    const kit = fileURLToPath(new URL('.', import.meta.url));
    const packs = mkdtempSync(join(tmpdir(), 'kit-pack-'));
    const env = { ...process.env, PATH: `${fileURLToPath(new URL('../../node_modules/.bin', import.meta.url))}:${process.env.PATH}` }; // prepack runs tsc
    execFileSync('npm', ['pack', '--silent', '--pack-destination', packs], { cwd: kit, env, stdio: ['ignore', 'ignore', 'inherit'] });
    const project = mkdtempSync(join(tmpdir(), 'kit-user-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'kit-user', private: true }));
    execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--prefer-offline', join(packs, readdirSync(packs)[0]!)], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
    const [good, broken] = [await startBrokenServer(), await startBrokenServer(['no-done'])];
    closers.push(good.close, broken.close);
    // Not execFileSync: the servers answer from this process's event loop.
    const run = (baseUrl: string, report: string) => promisify(execFile)('npx', ['conformance', '--base-url', baseUrl, '--api-key', GOOD_KEY, '--report', report], { cwd: project })
      .then(({ stdout }) => ({ code: 0, stdout }), (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }));
    const passed = await run(good.baseUrl, 'good');
    assert.equal(passed.code, 0, passed.stdout);
    assert.match(passed.stdout, /^CONFORMS: checks 12 passed, 0 failed/m);
    const failed = await run(broken.baseUrl, 'broken');
    assert.equal(failed.code, 1);
    assert.match(readFileSync(join(project, 'broken', 'report.md'), 'utf8'), /\| §4\.1 \| .* \| ❌ fail \| stream-done \|/);
    assert.match(readFileSync(join(project, 'broken', 'junit.xml'), 'utf8'), /<failure message="the stream does not end with data: \[DONE\]/);
  });
});
