import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contractDocument } from './contract.ts';
import type { CheckResult } from './run-kit.ts';

export interface SchemathesisOptions {
  /** Schemathesis's `st` command. */
  bin: string;
  /** Cases per operation and phase: small, so that a real model answers them in minutes. */
  examples: number;
  /** The whole pass's limit. */
  timeoutMs: number;
}

// Every check except the response-time limit (speed is not conformance).
/**
 * The hooks teach Schemathesis's generator what a JSON Schema cannot state (a tool_call_id answers
 * an earlier call, a named tool_choice is among the tools, …) and cap max_tokens so that a real
 * model answers in seconds. Beside the suites here; packed beside the kit's code in the package.
 */
const HOOKS = fileURLToPath(new URL('../schemathesis_hooks.py', import.meta.url));

const CHECKS = 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection,ignored_auth';

/**
 * A bounded Schemathesis pass against the core contract: the service's own additions (precontext,
 * vcache, its id pattern and model names) are not required of another implementation.
 */
export async function runSchemathesis(baseUrl: string, apiKey: string, model: string, options: SchemathesisOptions): Promise<CheckResult> {
  const dir = mkdtempSync(join(tmpdir(), 'conformance-fuzz-'));
  const contract = join(dir, 'openapi.core.json');
  writeFileSync(contract, JSON.stringify(coreContract(model)));
  const started = performance.now();
  const args = ['run', contract, '--url', baseUrl, '--header', `Authorization: Bearer ${apiKey}`, '--checks', CHECKS,
    '--max-examples', String(options.examples), '--seed', '20261122', '--workers', '1', '--request-timeout', '120',
    '--suppress-health-check', 'all', '--no-color'];
  const outcome = await new Promise<{ code: number; output: string }>((resolve) => {
    const env = { ...process.env, SCHEMATHESIS_HOOKS: 'schemathesis_hooks', PYTHONPATH: dirname(HOOKS) };
    execFile(options.bin, args, { env, timeout: options.timeoutMs, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: `${stdout}${stderr}` });
    });
  });
  // What failed, as Schemathesis explains it (its FAILURES section), else its closing lines.
  const failures = /=+ FAILURES =+([\s\S]*?)(=+ [A-Z ]+ =+|$)/.exec(outcome.output)?.[1]?.trim();
  const summary = (failures ?? outcome.output.split('\n').slice(-12).join('\n')).slice(0, 3000);
  // What it grades: request validation, and answers and errors against the contract's schemas.
  const rules = ['§2.1', '§2.9', '§4 200 json', '§4 errors'];
  return {
    id: 'schemathesis', title: `Schemathesis, ${options.examples} cases per phase, against the core contract`, group: 'core', rules,
    status: outcome.code === 0 ? 'pass' : 'fail', failedRules: outcome.code === 0 ? [] : rules, message: outcome.code === 0 ? '' : `Schemathesis exited ${outcome.code}`,
    ms: Math.round(performance.now() - started),
    exchanges: [{ request: `st ${args.join(' ').replace(apiKey, '***')}`, response: summary }],
  };
}

/** openapi.yaml without what only this service has: GET /models, its fields, ids and model names. */
function coreContract(model: string): Record<string, unknown> {
  const copy = structuredClone(contractDocument) as { paths: Record<string, unknown>; components: { schemas: Record<string, { required?: string[]; pattern?: string; enum?: string[] }> } };
  delete copy.paths['/models'];
  const schemas = copy.components.schemas;
  for (const schema of Object.values(schemas)) {
    if (schema.required) schema.required = schema.required.filter((field) => !['precontext', 'vcache'].includes(field));
  }
  delete schemas.CompletionId?.pattern;
  if (schemas.ModelId) schemas.ModelId.enum = [model];
  return copy as unknown as Record<string, unknown>;
}
