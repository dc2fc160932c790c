// The client as application teams get it: built, packed with `npm pack`, installed into a fresh
// project that has no access to this repository, type-checked there, and run against the test server.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createScriptedEngine, echoScript } from '../src/engines/scripted-engine.ts';
import { startTestServer, TEST_KEY, type TestServer } from '../src/testing/test-server.ts';

const CLIENT = fileURLToPath(new URL('.', import.meta.url));
const BIN = fileURLToPath(new URL('../node_modules/.bin', import.meta.url));
const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

/** Calls a tool when the request offers one, else echoes. */
const engine = createScriptedEngine((request) => request.tools.length === 0 ? echoScript(request) : [
  { type: 'tool_call', index: 0, id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
  { type: 'done', finishReason: 'tool_calls', usage: { promptTokens: 9, completionTokens: 6 } },
]);

// What an application team writes: plain JavaScript, importing the package by its name.
const SCRIPT = `
import { createServiceClient, createChatCompletion, streamChatCompletion, ServiceResponseError } from 'chat-completion-service-client';
const [baseUrl, apiKey] = process.argv.slice(2);
const client = createServiceClient({ baseUrl, apiKey });
const messages = [{ role: 'user', content: 'hello from the package' }];
const json = await createChatCompletion(client, { model: 'service', messages });
let streamed = '';
for await (const chunk of streamChatCompletion(client, { model: 'service', messages })) streamed += chunk.choices[0]?.delta.content ?? '';
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const call = (await createChatCompletion(client, { model: 'service', messages, tools })).choices[0].message.tool_calls[0];
let error;
try {
  await createChatCompletion(createServiceClient({ baseUrl, apiKey: 'sk-wrong' }), { model: 'service', messages });
} catch (err) {
  error = err instanceof ServiceResponseError ? { status: err.status, code: err.envelope.error.code } : String(err);
}
console.log(JSON.stringify({ json: json.choices[0].message.content, streamed, call: call.function, error }));
`;

// The same in TypeScript, where one line is wrong on purpose: the declarations must catch it.
const TYPED = `
import { createServiceClient, createChatCompletion, type ChatCompletionResponse } from 'chat-completion-service-client';
const client = createServiceClient({ baseUrl: 'http://127.0.0.1:1/v1' });
const answer: ChatCompletionResponse = await createChatCompletion(client, { model: 'service', messages: [{ role: 'user', content: 'hi' }] });
const content: string | null = answer.choices[0]!.message.content;
`;

describe('the packed client, installed in a fresh project', { timeout: 300_000 }, () => {
  let server: TestServer;
  let project: string;
  before(async () => {
    server = await startTestServer({ engine });
    const packs = mkdtempSync(join(tmpdir(), 'client-pack-'));
    const env = { ...process.env, PATH: `${BIN}:${process.env.PATH}` }; // prepack runs tsc
    execFileSync('npm', ['pack', '--silent', '--pack-destination', packs], { cwd: CLIENT, env, stdio: ['ignore', 'ignore', 'inherit'] });
    const [tarball] = readdirSync(packs);
    project = mkdtempSync(join(tmpdir(), 'client-user-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'client-user', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--prefer-offline', join(packs, tarball!)], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] });
  });
  after(() => server.close());

  it('answers JSON, streams, returns a tool call and throws the envelope as ServiceResponseError', async () => {
    writeFileSync(join(project, 'use.mjs'), SCRIPT);
    // Not execFileSync: the test server answers from this process's event loop.
    const { stdout } = await promisify(execFile)(process.execPath, ['use.mjs', server.baseUrl, TEST_KEY], { cwd: project, encoding: 'utf8' });
    const result = JSON.parse(stdout);
    assert.match(result.json, /hello from the package/);
    assert.equal(result.streamed, result.json);
    assert.deepEqual(result.call, { name: 'get_weather', arguments: '{"city":"Paris"}' });
    assert.deepEqual(result.error, { status: 401, code: 'invalid_api_key' });
  });

  it('ships type declarations generated from the contract: right code compiles, wrong code does not', () => {
    const tsconfig = { compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, lib: ['ES2023', 'DOM', 'DOM.AsyncIterable'], types: [] }, files: ['typed.ts'] };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
    writeFileSync(join(project, 'typed.ts'), TYPED);
    execFileSync(process.execPath, [TSC, '-p', project], { stdio: 'inherit' });
    writeFileSync(join(project, 'typed.ts'), `${TYPED}const wrong: number = answer.usage.prompt_tokens.length;\n`);
    assert.throws(() => execFileSync(process.execPath, [TSC, '-p', project], { stdio: 'pipe' }),
      (err: { stdout?: Buffer }) => /error TS2339: Property 'length' does not exist on type 'number'/.test(String(err.stdout)));
  });
});
