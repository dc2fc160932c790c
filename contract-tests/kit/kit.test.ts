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
import type { GenerationEvent, GenerationRequest } from '../../src/engines/engine.ts';
import { createScriptedEngine, echoScript } from '../../src/engines/scripted-engine.ts';
import { Guard } from '../../src/guard/guard.ts';
import { scriptedTextScorer } from '../../src/guard/scripted-text-scorer.ts';
import { TaskRegistry } from '../../src/tasks/registry.ts';
import type { Task } from '../../src/tasks/task.ts';
import { startTestServer, TEST_KEY } from '../../src/testing/test-server.ts';
import { BODY_LIMIT_BYTES, type Flaw, GOOD_KEY, LOW_LIMIT_KEY, NO_CREDITS_KEY, sample, startBrokenServer } from './broken-server.ts';
import { writeReport } from './report.ts';
import { RULES } from './rules.ts';
import { ALL_CHECKS, runKit } from './run-kit.ts';

const grade = (baseUrl: string, apiKey: string, drive: { keyWithoutCredits?: string; keyLowLimit?: string; bodyLimitBytes?: number } = {}) =>
  runKit({ baseUrl, apiKey, model: 'service', extensions: false, timeoutMs: 60_000, ...drive });
/** How the minimal server is driven to 402, 429 and 413. */
const DRIVE = { keyWithoutCredits: NO_CREDITS_KEY, keyLowLimit: LOW_LIMIT_KEY, bodyLimitBytes: BODY_LIMIT_BYTES };

/** A model stand-in that obeys tool_choice and response formats, as a real engine's grammar does. */
function obedientScript(request: GenerationRequest): GenerationEvent[] {
  const choice = request.toolChoice;
  if (request.tools.length > 0 && request.messages.at(-1)?.role !== 'tool' && choice !== 'none') {
    const tool = request.tools.find((t) => typeof choice === 'object' && t.name === choice.name) ?? request.tools[0]!;
    return [
      { type: 'tool_call', index: 0, id: 'call_1', name: tool.name, arguments: JSON.stringify(sample(tool.parameters.schema)) },
      { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 9, completionTokens: 6 } },
    ];
  }
  if (request.output.kind === 'json' && (request.maxTokens ?? 2) > 1) {
    return [{ type: 'content', text: JSON.stringify(sample(request.output.schema.schema)) }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 6 } }];
  }
  // A stop sequence ends the answer before it, as the local engine's stop triggers do.
  const events = echoScript(request);
  const text = events.map((e) => (e.type === 'content' ? e.text : '')).join('');
  const at = Math.min(...request.stop.map((s) => text.indexOf(s)).filter((i) => i >= 0));
  if (!Number.isFinite(at)) return events;
  return [{ type: 'content', text: text.slice(0, at) }, { type: 'done', finishReason: 'stop', usage: { promptTokens: 9, completionTokens: 3 } }];
}
/**
 * What the extension checks need of this service, without models: a translate task and an OCR
 * task that answer at once, and a guard classifier that finds S1 in "murder".
 */
const extensionTasks = () => new TaskRegistry([
  { name: 'translate', run: async ({ text }) => ({ name: 'translate', result: { source_language: 'en', target_language: 'es', text, translated_text: `es: ${text}`, engine: 'double' } }) },
  { name: 'ocr', run: async () => ({ name: 'ocr', result: { text: 'Buy milk today', pages: [{ source: 'messages[0].content[1]', page: 1, method: 'text_layer', width: 612, height: 792, text: 'Buy milk today', confidence: 1, lines: [] }] } }) },
] as Task[]);
const murderScorer = scriptedTextScorer((text) => (/murder/i.test(text) ? { S1: 0.97 } : {}));
const failedRules = (result: Awaited<ReturnType<typeof grade>>) => result.rules.filter((r) => r.status === 'fail').map((r) => r.rule.id);

describe('the conformance kit', { timeout: 300_000 }, () => {
  const closers: (() => Promise<void>)[] = [];
  after(() => Promise.all(closers.map((close) => close())));

  it('passes this service on every core rule, and writes JUnit, Markdown and HTML', async () => {
    const server = await startTestServer({ engine: createScriptedEngine(obedientScript) });
    closers.push(server.close);
    const result = await grade(server.baseUrl, TEST_KEY);
    assert.deepEqual(result.checks.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`), []);
    assert.ok(result.passed);
    // What it lacks it refuses with a 400, which is honest: logprobs and n > 1 are not offered.
    assert.deepEqual(result.checks.filter((c) => c.status === 'not offered').map((c) => c.id), ['logprobs', 'top-logprobs', 'n-choices']);
    assert.deepEqual(result.checks.filter((c) => c.status === 'not applicable').map((c) => c.id), ['quota-402', 'rate-limit-429', 'body-413']);
    const dir = mkdtempSync(join(tmpdir(), 'kit-report-'));
    writeReport(result, dir);
    assert.match(readFileSync(join(dir, 'junit.xml'), 'utf8'), /<testsuite name="conformance of [^"]+" tests="47" failures="0"/);
    assert.match(readFileSync(join(dir, 'report.md'), 'utf8'), /\| §4\.1 \| stream: true gives .* \| ✅ pass \| stream-done \|/);
    assert.match(readFileSync(join(dir, 'report.md'), 'utf8'), /\| §4\.4 \| .* \| — not applicable \| an extension of this service/);
    assert.match(readFileSync(join(dir, 'report.html'), 'utf8'), /<h1>Conformance of http:\/\/127\.0\.0\.1:\d+\/v1<\/h1>/);
  });

  it('passes a minimal correct OpenAI-compatible server on every check, driven to 402, 429 and 413', async () => {
    const server = await startBrokenServer();
    closers.push(server.close);
    const result = await grade(server.baseUrl, GOOD_KEY, DRIVE);
    assert.deepEqual(result.checks.filter((c) => c.status === 'fail').map((c) => `${c.id}: ${c.message}`), []);
    assert.deepEqual(failedRules(result), []);
    assert.deepEqual(result.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}: ${c.status}`), ['logprobs: not offered', 'top-logprobs: not offered', 'n-choices: not offered']);
    assert.equal(result.scores.overall.percent, 100);
  });

  // Each flaw, the check that must fail on it, and the rules that then fail.
  const CAUGHT: [Flaw, string, string[]][] = [
    ['no-done', 'stream-done', ['§4.1', '§6.1']],
    ['no-role', 'stream-chunks', ['§6.2']],
    ['wrong-envelope', 'bad-key', ['§2.9']],
    ['accepts-bad-key', 'bad-key', ['§5.3', '§5.4', '§7 401']],
    ['absent-finish-reason', 'stream-chunks', ['§6.3']],
    ['json-schema-ignored', 'json-schema', ['§2.1 response_format', '§2.4 json_schema.schema']],
    ['json-schema-loose', 'json-schema', ['§2.4 json_schema.strict']],
    ['calls-despite-none', 'tool-choice', ['§4.5', '§2.1 tool_choice', '§2.6 none']],
    ['ignores-named-choice', 'tool-choice', ['§4.5', '§2.6 named']],
    ['whole-args-each-delta', 'stream-tool-args', []],
    ['refuses-tool-history', 'tool-history', ['§4.5']],
    ['needs-assistant-content', 'assistant-no-content', ['§4.5']],
    ['usage-on-finish-chunk', 'include-usage', []],
    ['ignores-max-tokens', 'max-tokens-length', ['§6.3']],
    ['mangles-unicode', 'unicode', []],
    ['shared-ids', 'concurrent-streams', ['§6.2']],
    ['shared-ids', 'completion-ids', ['§2.8 id']],
    ['cacheable-stream', 'headers', []],
    ['ignores-logprobs', 'logprobs', []],
    ['ignores-n', 'n-choices', []],
    ['credits-ignored', 'quota-402', ['§7 402']],
    ['no-retry-after', 'rate-limit-429', ['§7 429']],
    ['html-413', 'body-413', ['§2.9', '§7 413', '§4 errors']],
    ['always-streams', 'completion', ['§1', '§2.1 stream', '§4 200 json']],
    ['model-not-echoed', 'model-echo', ['§2.1 model', '§2.8 model']],
    ['usage-miscounted', 'response-shape', ['§2.8 usage']],
    ['accepts-missing-key', 'missing-key', ['§5.1', '§4 Authorization']],
    ['ignores-limits', 'limit-temperature', ['§8 temperature']],
    ['no-v1', 'base-url', ['§9']],
    ['ignores-stop', 'stop-sequence', []],
    ['refuses-unknown-fields', 'unknown-fields', ['§2.1']],
    ['object-arguments', 'tool-flow', ['§2.7 function.arguments']],
    // The table rows (rules.ts), one flaw each.
    ['accepts-missing-messages', 'invalid-body', ['§2.1 messages']],
    ['400-as-422', 'invalid-body', ['§7 400']],
    ['errors-as-text', 'bad-key', ['§4 errors']],
    ['wrong-object', 'completion', ['§2.8 object']],
    ['wrong-finish-reason', 'response-shape', ['§2.8 choices']],
    ['stream-as-json-type', 'stream-done', ['§4 200 event-stream']],
    ['refuses-temperature-2', 'limit-temperature', ['§2.1 temperature']],
    ['accepts-temperature-above-2', 'limit-temperature', ['§8 temperature']],
    ['refuses-top-p-1', 'limit-top-p', ['§2.1 top_p']],
    ['accepts-top-p-above-1', 'limit-top-p', ['§8 top_p']],
    ['accepts-max-tokens-0', 'limit-max-tokens', ['§2.1 max_tokens']],
    ['accepts-max-tokens-above-32000', 'limit-max-tokens', ['§8 max_tokens']],
    ['ignores-tools', 'tool-flow', ['§2.1 tools']],
    ['refuses-assistant-tool-calls', 'assistant-tool-calls', ['§2.2 tool_calls']],
    ['needs-tool-description', 'tool-no-description', ['§2.5 function.description']],
    ['call-without-id', 'tool-flow', ['§2.7 id']],
    ['wrong-call-type', 'tool-flow', ['§2.7 type']],
    ['call-without-name', 'tool-flow', ['§2.7 function.name']],
    ['accepts-unknown-role', 'message-roles', ['§2.2 role']],
    ['accepts-missing-content', 'content-required', ['§2.2 content']],
    ['refuses-text-parts', 'text-parts', ['§2.3 text']],
    ['refuses-name', 'message-name', ['§2.2 name']],
    ['accepts-tool-without-id', 'tool-message-id', ['§2.2 tool_call_id']],
    ['image-part-crash', 'image-part', ['§2.3 image_url']],
    ['file-part-crash', 'file-part', ['§2.3 file']],
    ['refuses-text-format', 'response-format-text', ['§2.4 type']],
    ['accepts-json-schema-missing', 'response-format-invalid', ['§2.4 json_schema']],
    ['accepts-unnamed-schema', 'response-format-invalid', ['§2.4 json_schema.name']],
    ['accepts-unknown-tool-type', 'tool-definition', ['§2.5 type']],
    ['accepts-tool-without-function', 'tool-definition', ['§2.5 function']],
    ['accepts-unnamed-tool', 'tool-definition', ['§2.5 function.name']],
    ['needs-tool-parameters', 'tool-no-parameters', ['§2.5 function.parameters']],
    ['refuses-auto-choice', 'tool-choice', ['§2.6 auto']],
    ['ignores-required', 'tool-choice', ['§2.6 required']],
    ['refuses-json-charset', 'content-type-charset', ['§4 Content-Type']],
  ];
  for (const [flaw, check, rules] of CAUGHT) {
    it(`catches ${flaw}: ${check} fails${rules.length ? `, and rules ${rules.join(', ')}` : ''}, with the exchange as evidence`, async () => {
      const server = await startBrokenServer([flaw]);
      closers.push(server.close);
      const result = await grade(server.baseUrl, GOOD_KEY, DRIVE);
      assert.ok(!result.passed);
      assert.equal(result.checks.find((c) => c.id === check)?.status, 'fail', `${check} did not fail`);
      for (const rule of rules) assert.ok(failedRules(result).includes(rule), `${rule} not failed: ${failedRules(result).join(', ')}`);
      const failed = result.checks.find((c) => c.status === 'fail')!;
      assert.ok(failed.exchanges.length > 0 && failed.exchanges[0]!.response.length > 0);
      assert.ok(!failed.exchanges.some((e) => e.request.includes(GOOD_KEY)), 'the key is masked in the evidence');
    });
  }

  it('grades a stop sequence refused with a 400 naming stop as not offered, not as failed', async () => {
    const server = await startBrokenServer(['refuses-stop']);
    closers.push(server.close);
    const result = await grade(server.baseUrl, GOOD_KEY, DRIVE);
    const check = result.checks.find((c) => c.id === 'stop-sequence')!;
    assert.equal(check.status, 'not offered', check.message);
    assert.ok(result.passed);
  });

  it('every core rule the specification does not leave open is graded by a check shown above to fail on a flaw', () => {
    const proven = new Set(CAUGHT.flatMap(([, , rules]) => rules));
    const unproven = RULES.filter((r) => r.group === 'core' && !r.open && !proven.has(r.id)).map((r) => r.id);
    assert.deepEqual(unproven, []);
  });

  it('grades every extension rule by a check that fails on the minimal reference server, which lacks the extensions, and passes on this service', async () => {
    const extensionRules = RULES.filter((r) => r.group === 'extension' && !r.open).map((r) => r.id);
    const ungraded = extensionRules.filter((id) => !ALL_CHECKS.some((c) => c.group === 'extension' && c.rules.includes(id)));
    assert.deepEqual(ungraded, [], 'extension rules without a check');
    const onlyExtensions = { model: 'service', extensions: true, timeoutMs: 60_000, only: ['extension'] };
    const minimal = await startBrokenServer();
    closers.push(minimal.close);
    const without = await runKit({ baseUrl: minimal.baseUrl, apiKey: GOOD_KEY, ...onlyExtensions });
    assert.deepEqual(without.checks.filter((c) => c.status !== 'fail').map((c) => `${c.id}: ${c.status}`), []);
    assert.deepEqual(extensionRules.filter((id) => without.rules.find((r) => r.rule.id === id)?.status !== 'fail'), []);
    const service = await startTestServer({ engine: createScriptedEngine(obedientScript), tasks: extensionTasks(), guard: new Guard(murderScorer) });
    closers.push(service.close);
    const withThem = await runKit({ baseUrl: service.baseUrl, apiKey: TEST_KEY, ...onlyExtensions });
    assert.deepEqual(withThem.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}: ${c.status}: ${c.message}`), []);
    assert.deepEqual(withThem.checks.map((c) => c.id), ALL_CHECKS.filter((c) => c.group === 'extension').map((c) => c.id));
  });

  it('fails only the rules a failure concerns: a server that never calls a tool fails §2.1 tools, and the ToolCall rows are not graded, not failed', async () => {
    const server = await startBrokenServer(['ignores-tools']);
    closers.push(server.close);
    const result = await grade(server.baseUrl, GOOD_KEY, DRIVE);
    const row = (id: string) => result.rules.find((r) => r.rule.id === id)!;
    assert.equal(row('§2.1 tools').status, 'fail');
    assert.deepEqual([row('§2.7 id').status, row('§2.7 id').basis], ['not applicable', 'not graded: tool-flow failed on another rule first']);
    // tool_choice auto was answered (with text), so its row is not failed with required's.
    assert.equal(row('§2.6 required').status, 'fail');
    assert.equal(row('§2.6 auto').status, 'not applicable');
  });

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
    // A rule whose checks were left out says so, rather than that it has no check.
    assert.equal(only.rules.find((r) => r.rule.id === '§2.6 auto')?.basis, 'not graded in this run: tool-choice left out');
    const skipped = await runKit({ baseUrl: server.baseUrl, apiKey: GOOD_KEY, model: 'service', extensions: false, timeoutMs: 60_000, skip: ['stream-done', 'stream-chunks', 'compat', 'extension'] });
    assert.ok(skipped.checks.length > 0 && skipped.checks.every((c) => !c.id.startsWith('stream-') && c.group === 'core'));
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
    assert.match(passed.stdout, /^CONFORMS: checks 41 passed, 0 failed, 3 not offered, 3 not applicable/m);
    const failed = await run(broken.baseUrl, 'broken');
    assert.equal(failed.code, 1);
    assert.match(readFileSync(join(project, 'broken', 'report.md'), 'utf8'), /\| §4\.1 \| .* \| ❌ fail \| stream-done \|/);
    assert.match(readFileSync(join(project, 'broken', 'junit.xml'), 'utf8'), /<failure message="the stream does not end with data: \[DONE\]/);
  });
});
