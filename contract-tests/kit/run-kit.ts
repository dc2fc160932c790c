import { type Check, type CheckContext, CheckFailure, CHECKS, type Group, NotApplicable, NotOffered } from './checks.ts';
import { COMPAT_CHECKS } from './compat-checks.ts';
import { EXTENSION_CHECKS } from './extension-checks.ts';
import { type Exchange, Probe } from './http-probe.ts';
import { ROW_CHECKS } from './row-checks.ts';
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
  /** Only these checks, by check id or group; none given means all. */
  only?: string[];
  /** Leave out these checks, by check id or group. */
  skip?: string[];
  /** Ways to drive the server to 402, 429 and 413; a check whose way is not given is not applicable. */
  keyWithoutCredits?: string;
  keyLowLimit?: string;
  bodyLimitBytes?: number;
}

/**
 * pass and fail; `not offered`: the server refuses, with a 400 in the envelope, a feature it says it
 * lacks (logprobs, n > 1); `not applicable`: nothing to grade (open in the specification, or the kit
 * was not told how to reach the case).
 */
export type Status = 'pass' | 'fail' | 'not offered' | 'not applicable';

/** passed / (passed + failed) of a group's checks: not offered and not applicable count for neither. */
export interface Score {
  passed: number;
  failed: number;
  notOffered: number;
  notApplicable: number;
  /** 0–100, or null when nothing was graded. */
  percent: number | null;
}

export interface CheckResult {
  id: string;
  title: string;
  group: Check['group'];
  rules: string[];
  status: Status;
  /** The rules a failure concerns (all the check's rules unless the failure names fewer). */
  failedRules: string[];
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
  options: Omit<KitOptions, 'apiKey' | 'checks' | 'keyWithoutCredits' | 'keyLowLimit'>;
  when: string;
  checks: CheckResult[];
  rules: RuleResult[];
  scores: Record<Group | 'overall', Score>;
  passed: boolean;
}

/** Core first (the numbered rules, then the table rows), then what users hit most, then this service's extensions. */
export const ALL_CHECKS: Check[] = [...CHECKS.filter((c) => c.group === 'core'), ...ROW_CHECKS, ...COMPAT_CHECKS, ...CHECKS.filter((c) => c.group !== 'core'), ...EXTENSION_CHECKS];

/** Whether a check is chosen by --only and not left out by --skip (either names an id or a group). */
export function chosen(check: Pick<Check, 'id' | 'group'>, only: string[] = [], skip: string[] = []): boolean {
  const named = (list: string[]) => list.includes(check.id) || list.includes(check.group);
  return (only.length === 0 || named(only)) && !named(skip);
}

export function score(checks: Pick<CheckResult, 'status'>[]): Score {
  const count = (status: Status) => checks.filter((c) => c.status === status).length;
  const [passed, failed] = [count('pass'), count('fail')];
  return { passed, failed, notOffered: count('not offered'), notApplicable: count('not applicable'),
    percent: passed + failed === 0 ? null : Math.round((1000 * passed) / (passed + failed)) / 10 };
}

/** Runs every check (core, and the extensions when asked) one after another, then grades each rule. */
export async function runKit(options: KitOptions): Promise<KitResult> {
  const baseUrl = options.baseUrl.replace(/\/$/, '');
  const checks: CheckResult[] = [];
  const context: CheckContext = { model: options.model, keyWithoutCredits: options.keyWithoutCredits, keyLowLimit: options.keyLowLimit, bodyLimitBytes: options.bodyLimitBytes };
  const all = options.checks ?? ALL_CHECKS;
  for (const check of all) {
    if (check.group === 'extension' && !options.extensions) continue;
    if (!chosen(check, options.only, options.skip)) continue;
    checks.push(await runCheck(check, new Probe(baseUrl, options.apiKey, AbortSignal.timeout(options.timeoutMs)), context, options.timeoutMs));
  }
  if (options.schemathesis && chosen({ id: 'schemathesis', group: 'core' }, options.only, options.skip)) {
    checks.push(await runSchemathesis(baseUrl, options.apiKey, options.model, options.schemathesis));
  }
  const leftOut = all.filter((c) => !checks.some((r) => r.id === c.id)).map((c) => ({ id: c.id, rules: c.rules }));
  const rules = RULES.map((rule) => grade(rule, checks, options.extensions, leftOut));
  const { apiKey: _, checks: __, keyWithoutCredits: ___, keyLowLimit: ____, ...shown } = options;
  const scores = { core: score(checks.filter((c) => c.group === 'core')), compat: score(checks.filter((c) => c.group === 'compat')),
    extension: score(checks.filter((c) => c.group === 'extension')), overall: score(checks) };
  return { options: { ...shown, baseUrl }, when: new Date().toISOString(), checks, rules, scores, passed: checks.every((c) => c.status !== 'fail') };
}

async function runCheck(check: Check, probe: Probe, context: CheckContext, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms (--timeout-ms)`)), timeoutMs);
  });
  let status: Status = 'pass';
  let message = '';
  let failedRules: string[] = [];
  try {
    await Promise.race([check.run(probe, context), overrun]);
  } catch (err) {
    status = err instanceof NotOffered ? 'not offered' : err instanceof NotApplicable ? 'not applicable' : 'fail';
    message = err instanceof Error ? err.message : String(err);
    if (status === 'fail') {
      const { only, except = [] } = err instanceof CheckFailure ? err.scope : {};
      failedRules = check.rules.filter((r) => (only ? only.includes(r) : true) && !except.includes(r));
    }
  } finally {
    clearTimeout(timer);
  }
  const { id, title, group, rules } = check;
  return { id, title, group, rules, status, failedRules, message, ms: Math.round(performance.now() - started), exchanges: probe.exchanges };
}

function grade(rule: Rule, checks: CheckResult[], extensions: boolean, leftOut: Pick<Check, 'id' | 'rules'>[]): RuleResult {
  // A failed check grades only the rules its failure concerns; it stopped before the others.
  const graded = checks.filter((c) => c.rules.includes(rule.id) && (c.status === 'pass' || c.failedRules.includes(rule.id)));
  const stopped = checks.filter((c) => c.rules.includes(rule.id) && c.status === 'fail' && !c.failedRules.includes(rule.id));
  const unrun = leftOut.filter((c) => c.rules.includes(rule.id)).map((c) => c.id);
  const refused = checks.filter((c) => c.rules.includes(rule.id) && c.status === 'not offered');
  if (graded.length === 0 && refused.length > 0) return { rule, status: 'not offered', basis: refused.map((c) => c.id).join(', ') };
  if (graded.length === 0) {
    const why = rule.open ? rule.why ?? 'the specification leaves it open ("not shown")'
      : rule.group === 'extension' && !extensions ? 'an extension of this service; not graded without --extensions'
        : stopped.length > 0 ? `not graded: ${stopped.map((c) => `${c.id} failed on another rule first`).join(', ')}`
          : unrun.length > 0 ? `not graded in this run: ${unrun.join(', ')} left out` : 'no check';
    return { rule, status: 'not applicable', basis: why };
  }
  const failed = graded.filter((c) => c.status === 'fail');
  return { rule, status: failed.length > 0 ? 'fail' : 'pass', basis: (failed.length > 0 ? failed : graded).map((c) => c.id).join(', ') };
}
