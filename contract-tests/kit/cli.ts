#!/usr/bin/env node
// Grades any implementation of the chat completion contract and writes a report.
//   conformance --base-url URL --api-key KEY [--model ID] [--report DIR] [--extensions]
//               [--timeout-ms N] [--schemathesis PATH_TO_ST] [--schemathesis-examples N]
//               [--only ID_OR_GROUP,…] [--skip ID_OR_GROUP,…]
//               [--key-without-credits KEY] [--key-low-limit KEY] [--body-limit-bytes N]
import { parseArgs } from 'node:util';
import { scoreLines, summary, writeReport } from './report.ts';
import { runKit } from './run-kit.ts';

const USAGE = 'usage: conformance --base-url URL --api-key KEY [--model ID] [--report DIR] [--extensions] [--timeout-ms N] [--schemathesis PATH_TO_ST] [--schemathesis-examples N] [--only ID_OR_GROUP,…] [--skip ID_OR_GROUP,…] [--key-without-credits KEY] [--key-low-limit KEY] [--body-limit-bytes N]';
const { values } = parseArgs({
  options: {
    'base-url': { type: 'string' }, 'api-key': { type: 'string' }, model: { type: 'string', default: 'service' },
    report: { type: 'string', default: 'conformance-report' }, extensions: { type: 'boolean', default: false },
    'timeout-ms': { type: 'string', default: '180000' }, schemathesis: { type: 'string' }, 'schemathesis-examples': { type: 'string', default: '10' },
    only: { type: 'string', default: '' }, skip: { type: 'string', default: '' },
    'key-without-credits': { type: 'string' }, 'key-low-limit': { type: 'string' }, 'body-limit-bytes': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help || !values['base-url'] || !values['api-key']) {
  console.error(USAGE);
  process.exit(values.help ? 0 : 2);
}
const timeoutMs = Number(values['timeout-ms']);
const list = (text: string) => text.split(',').map((s) => s.trim()).filter(Boolean);
const result = await runKit({
  baseUrl: values['base-url'], apiKey: values['api-key'], model: values.model, extensions: values.extensions, timeoutMs,
  only: list(values.only), skip: list(values.skip), keyWithoutCredits: values['key-without-credits'], keyLowLimit: values['key-low-limit'],
  ...(values['body-limit-bytes'] ? { bodyLimitBytes: Number(values['body-limit-bytes']) } : {}),
  ...(values.schemathesis ? { schemathesis: { bin: values.schemathesis, examples: Number(values['schemathesis-examples']), timeoutMs: 30 * 60_000 } } : {}),
});
const MARKS = { pass: 'ok  ', fail: 'FAIL', 'not offered': 'NOFF', 'not applicable': 'n/a ' } as const;
// A failure shows its last exchange too: a CI log is often all there is once the report's folder is gone.
const indented = (text: string) => text.slice(0, 2000).replace(/^/gm, '       ');
for (const c of result.checks) {
  console.log(`${MARKS[c.status]} ${c.id} (${c.rules.join(', ')})${c.message ? `: ${c.message}` : ''}`);
  const last = c.exchanges.at(-1);
  if (c.status === 'fail' && last) console.log(indented(`${last.request}\n---\n${last.response}`));
}
console.log(summary(result));
for (const line of scoreLines(result)) console.log(`score ${line}`);
console.log(`report: ${writeReport(result, values.report).join(', ')}`);
process.exit(result.passed ? 0 : 1);
