#!/usr/bin/env node
// Grades any implementation of the chat completion contract and writes a report.
//   conformance --base-url URL --api-key KEY [--model ID] [--report DIR] [--extensions]
//               [--timeout-ms N] [--schemathesis PATH_TO_ST] [--schemathesis-examples N]
import { parseArgs } from 'node:util';
import { writeReport, summary } from './report.ts';
import { runKit } from './run-kit.ts';

const USAGE = 'usage: conformance --base-url URL --api-key KEY [--model ID] [--report DIR] [--extensions] [--timeout-ms N] [--schemathesis PATH_TO_ST] [--schemathesis-examples N]';
const { values } = parseArgs({
  options: {
    'base-url': { type: 'string' }, 'api-key': { type: 'string' }, model: { type: 'string', default: 'service' },
    report: { type: 'string', default: 'conformance-report' }, extensions: { type: 'boolean', default: false },
    'timeout-ms': { type: 'string', default: '180000' }, schemathesis: { type: 'string' }, 'schemathesis-examples': { type: 'string', default: '10' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help || !values['base-url'] || !values['api-key']) {
  console.error(USAGE);
  process.exit(values.help ? 0 : 2);
}
const timeoutMs = Number(values['timeout-ms']);
const result = await runKit({
  baseUrl: values['base-url'], apiKey: values['api-key'], model: values.model, extensions: values.extensions, timeoutMs,
  ...(values.schemathesis ? { schemathesis: { bin: values.schemathesis, examples: Number(values['schemathesis-examples']), timeoutMs: 30 * 60_000 } } : {}),
});
for (const c of result.checks) console.log(`${c.status === 'pass' ? 'ok  ' : 'FAIL'} ${c.id} (${c.rules.join(', ')})${c.message ? `: ${c.message}` : ''}`);
console.log(summary(result));
console.log(`report: ${writeReport(result, values.report).join(', ')}`);
process.exit(result.passed ? 0 : 1);
