import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CheckResult, KitResult, RuleResult, Score, Status } from './run-kit.ts';

const MARK: Record<Status, string> = { pass: '✅ pass', fail: '❌ fail', 'not offered': '⊘ not offered', 'not applicable': '— not applicable' };

/** Writes the report: junit.xml for CI, report.json for programs, report.md and report.html for people. Answers the paths. */
export function writeReport(result: KitResult, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const files = { 'junit.xml': junit(result), 'report.json': `${JSON.stringify(result, null, 2)}\n`, 'report.md': markdown(result), 'report.html': html(result) };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return Object.keys(files).map((name) => join(dir, name));
}

/** One line: how many checks and rules passed. */
export function summary(result: KitResult): string {
  const count = (items: { status: Status }[], status: Status) => items.filter((i) => i.status === status).length;
  return `${result.passed ? 'CONFORMS' : 'DOES NOT CONFORM'}: checks ${count(result.checks, 'pass')} passed, ${count(result.checks, 'fail')} failed, `
    + `${count(result.checks, 'not offered')} not offered, ${count(result.checks, 'not applicable')} not applicable; `
    + `rules ${count(result.rules, 'pass')} passed, ${count(result.rules, 'fail')} failed, ${count(result.rules, 'not offered')} not offered, ${count(result.rules, 'not applicable')} not applicable`;
}

/** One score as text: "92.3% (12 of 13; 2 not offered, 1 not applicable)". */
export function scoreText(s: Score): string {
  return `${s.percent === null ? '—' : `${s.percent}%`} (${s.passed} of ${s.passed + s.failed}; ${s.notOffered} not offered, ${s.notApplicable} not applicable)`;
}

/** The scores per group and overall, one line each. */
export function scoreLines(result: KitResult): string[] {
  return (['core', 'compat', 'extension', 'overall'] as const).map((g) => `${g}: ${scoreText(result.scores[g])}`);
}

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function junit(result: KitResult): string {
  const failures = result.checks.filter((c) => c.status === 'fail').length;
  const cases = result.checks.map((c) => {
    // JUnit has no "not offered": it and "not applicable" are skipped, with the reason.
    const body = c.status === 'fail' ? `<failure message="${xml(c.message)}">${xml(evidenceText(c))}</failure>`
      : c.status === 'pass' ? '' : `<skipped message="${xml(`${c.status}: ${c.message}`)}"/>`;
    return `    <testcase classname="conformance.${c.group}" name="${xml(`${c.id}: ${c.title} (${c.rules.join(', ')})`)}" time="${(c.ms / 1000).toFixed(3)}">${body}</testcase>`;
  });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="conformance of ${xml(result.options.baseUrl)}" tests="${result.checks.length}" failures="${failures}" skipped="${result.checks.filter((c) => c.status !== 'pass' && c.status !== 'fail').length}" timestamp="${result.when}">\n${cases.join('\n')}\n  </testsuite>\n</testsuites>\n`;
}

const evidenceText = (c: CheckResult) => c.exchanges.map((e) => `${e.request}\n---\n${e.response}`).join('\n\n');

function markdown(result: KitResult): string {
  const o = result.options;
  const lines = [
    `# Conformance report: ${o.baseUrl}`, '',
    `${summary(result)}.`, '',
    `Model \`${o.model}\`; extensions ${o.extensions ? 'graded' : 'not graded'}; each check limited to ${o.timeoutMs} ms; ${result.when}.`, '',
    '| group | score |', '|---|---|', ...scoreLines(result).map((l) => `| ${l.replace(': ', ' | ')} |`), '',
  ];
  for (const group of ['core', 'extension'] as const) {
    lines.push(group === 'core' ? '## The specification\'s rules: core wire format' : '## This service\'s extensions (optional: --extensions)', '',
      '| rule | what it says | result | graded by |', '|---|---|---|---|');
    for (const r of result.rules.filter((r: RuleResult) => r.rule.group === group)) {
      lines.push(`| ${r.rule.id} | ${r.rule.text} | ${MARK[r.status]} | ${r.basis} |`);
    }
    lines.push('');
  }
  lines.push('## Checks and their evidence', '');
  for (const c of result.checks) {
    lines.push(`### ${MARK[c.status]}: ${c.id} (${c.rules.join(', ')})`, '', `${c.title}. ${c.ms} ms.${c.message ? ` **${c.message}**` : ''}`, '');
    // A passing check shows its first exchange; a failing one shows all of them.
    for (const e of c.status === 'fail' ? c.exchanges : c.exchanges.slice(0, 1)) lines.push('```http', e.request, '```', '```http', e.response, '```', '');
  }
  return `${lines.join('\n')}\n`;
}

function html(result: KitResult): string {
  const esc = xml;
  const color: Record<Status, string> = { pass: '#1a7f37', fail: '#cf222e', 'not offered': '#9a6700', 'not applicable': '#6e7781' };
  const row = (r: RuleResult) => `<tr><td>${esc(r.rule.id)}</td><td>${esc(r.rule.text)}</td><td style="color:${color[r.status]};font-weight:600">${esc(r.status)}</td><td>${esc(r.basis)}</td></tr>`;
  const table = (group: 'core' | 'extension') => `<table><tr><th>rule</th><th>what it says</th><th>result</th><th>graded by</th></tr>${result.rules.filter((r) => r.rule.group === group).map(row).join('')}</table>`;
  const check = (c: CheckResult) => `<details${c.status === 'fail' ? ' open' : ''}><summary style="color:${color[c.status]}">${esc(c.status)}: ${esc(c.id)} (${esc(c.rules.join(', '))}): ${esc(c.title)}${c.message ? ` — <b>${esc(c.message)}</b>` : ''}</summary>${(c.status === 'fail' ? c.exchanges : c.exchanges.slice(0, 1)).map((e) => `<pre>${esc(e.request)}</pre><pre>${esc(e.response)}</pre>`).join('')}</details>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Conformance of ${esc(result.options.baseUrl)}</title>
<style>body{font:15px system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}table{border-collapse:collapse;width:100%}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}pre{background:#f6f8fa;padding:8px;overflow:auto;white-space:pre-wrap}</style></head><body>
<h1>Conformance of ${esc(result.options.baseUrl)}</h1><p><b>${esc(summary(result))}</b></p><ul>${scoreLines(result).map((l) => `<li>${esc(l)}</li>`).join('')}</ul><p>Model <code>${esc(result.options.model)}</code>; extensions ${result.options.extensions ? 'graded' : 'not graded'}; ${esc(result.when)}.</p>
<h2>The specification's rules: core wire format</h2>${table('core')}<h2>This service's extensions</h2>${table('extension')}
<h2>Checks and their evidence</h2>${result.checks.map(check).join('\n')}</body></html>\n`;
}
