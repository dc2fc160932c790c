import { type Check, CHECKS } from './checks.ts';
import { type Exchange, Probe } from './http-probe.ts';
import { type Rule, RULES } from './rules.ts';
import { runSchemathesis, type SchemathesisOptions } from './schemathesis.ts';

export interface KitOptions {
  baseUrl: string;
  apiKey: string;
  /** The model id to ask for (`service` here; whatever a vLLM or Ollama server serves). */
  model: string;
  /** Also grade this service's extensions (tasks, guardrails, cache, precontext, exact schemas). */
  extensions: boolean;
  /** Each check's limit; a check still running then fails (a hang detector, not a speed test). */
  timeoutMs: number;
  /** A bounded Schemathesis pass, when its `st` is at hand. */
  schemathesis?: SchemathesisOptions;
  /** Tests only: other checks than the built-in ones. */
  checks?: Check[];
}

export type Status = 'pass' | 'fail' | 'not applicable';

export interface CheckResult {
  id: string;
  title: string;
  group: Check['group'];
  rules: string[];
  status: Status;
  message: string;
  ms: number;
  exchanges: Exchange[];
}

export interface RuleResult {
  rule: Rule;
  status: Status;
  /** The checks that graded it, or why none did. */
  basis: string;
}

export interface KitResult {
  options: Omit<KitOptions, 'apiKey' | 'checks'>;
  when: string;
  checks: CheckResult[];
  rules: RuleResult[];
  passed: boolean;
}

/** Runs every check (core, and the extensions when asked) one after another, then grades each rule. */
export async function runKit(options: KitOptions): Promise<KitResult> {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const checks: CheckResult[] = [];
  for (const check of options.checks ?? CHECKS) {
    if (check.group === 'extension' && !options.extensions) continue;
    checks.push(await runCheck(check, new Probe(baseUrl, options.apiKey, AbortSignal.timeout(options.timeoutMs)), options));
  }
  if (options.schemathesis) checks.push(await runSchemathesis(baseUrl, options.apiKey, options.model, options.schemathesis));
  const rules = RULES.map((rule) => grade(rule, checks, options.extensions));
  const { apiKey: _, checks: __, ...shown } = options;
  return { options: { ...shown, baseUrl }, when: new Date().toISOString(), checks, rules, passed: checks.every((c) => c.status !== 'fail') };
}

async function runCheck(check: Check, probe: Probe, options: KitOptions): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${options.timeoutMs} ms (--timeout-ms)`)), options.timeoutMs);
  });
  let status: Status = 'pass';
  let message = '';
  try {
    await Promise.race([check.run(probe, options.model), overrun]);
  } catch (err) {
    status = 'fail';
    message = err instanceof Error ? err.message : String(err);
  } finally {
    clearTimeout(timer);
  }
  const { id, title, group, rules } = check;
  return { id, title, group, rules, status, message, ms: Math.round(performance.now() - started), exchanges: probe.exchanges };
}

function grade(rule: Rule, checks: CheckResult[], extensions: boolean): RuleResult {
  const graded = checks.filter((c) => c.rules.includes(rule.id) && c.status !== 'not applicable');
  if (graded.length === 0) {
    const why = rule.open ? 'the specification leaves it open ("not shown")'
      : rule.group === 'extension' && !extensions ? 'an extension of this service; not graded without --extensions' : 'no check';
    return { rule, status: 'not applicable', basis: why };
  }
  const failed = graded.filter((c) => c.status === 'fail');
  return { rule, status: failed.length > 0 ? 'fail' : 'pass', basis: (failed.length > 0 ? failed : graded).map((c) => c.id).join(', ') };
}
