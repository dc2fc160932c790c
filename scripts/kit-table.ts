// Grades several servers with the same kit, in one run, and writes the README's table of scores
// (bench/results/kit-table.md and .json): this service, the Prism mock, and the minimal reference
// server (contract-tests/kit/broken-server.ts without flaws, started here).
//   SERVICE_BASE_URL=… SERVICE_API_KEY=… [SERVICE_BODY_LIMIT_BYTES=…] MOCK_BASE_URL=…
//   [LITELLM_BASE_URL=… LITELLM_API_KEY=…] node --import tsx scripts/kit-table.ts
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { BODY_LIMIT_BYTES, GOOD_KEY, LOW_LIMIT_KEY, NO_CREDITS_KEY, startBrokenServer } from '../contract-tests/kit/broken-server.ts';
import { scoreText } from '../contract-tests/kit/report.ts';
import { type KitOptions, type KitResult, runKit } from '../contract-tests/kit/run-kit.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see the usage at the top of scripts/kit-table.ts)`);
  return value;
};
const kitVersion = (JSON.parse(readFileSync(new URL('../contract-tests/kit/package.json', import.meta.url), 'utf8')) as { version: string }).version;

const reference = await startBrokenServer();
const targets: { name: string; options: Omit<KitOptions, 'model' | 'extensions' | 'timeoutMs'> }[] = [
  { name: 'this service (local model)', options: { baseUrl: env('SERVICE_BASE_URL'), apiKey: env('SERVICE_API_KEY'), bodyLimitBytes: Number(process.env.SERVICE_BODY_LIMIT_BYTES ?? 20 * 1024 * 1024) } },
  { name: 'the Prism mock (`make mock`)', options: { baseUrl: env('MOCK_BASE_URL'), apiKey: 'any-key' } },
  // Optional (make kit-table KIT_TABLE_LITELLM=1): LiteLLM's proxy in front of this service.
  ...(process.env.LITELLM_BASE_URL ? [{ name: "LiteLLM's proxy in front of this service", options: { baseUrl: env('LITELLM_BASE_URL'), apiKey: env('LITELLM_API_KEY') } }] : []),
  { name: 'the minimal reference server', options: { baseUrl: reference.baseUrl, apiKey: GOOD_KEY, keyWithoutCredits: NO_CREDITS_KEY, keyLowLimit: LOW_LIMIT_KEY, bodyLimitBytes: BODY_LIMIT_BYTES } },
];

const rows: { name: string; result: KitResult; seconds: number }[] = [];
for (const target of targets) {
  const started = performance.now();
  const result = await runKit({ ...target.options, model: 'service', extensions: false, timeoutMs: 180_000 });
  rows.push({ name: target.name, result, seconds: Math.round((performance.now() - started) / 1000) });
  console.error(`${target.name}: ${scoreText(result.scores.overall)}`);
}
await reference.close();

const failed = (r: KitResult) => r.checks.filter((c) => c.status === 'fail').map((c) => `\`${c.id}\``).join(', ') || 'none';
const lines = [
  `Graded by chat-completion-conformance ${kitVersion} (core and compat groups), ${new Date().toISOString().slice(0, 10)}, \`make kit-table\`.`, '',
  '| server | core | compat | overall | failed checks | run |', '|---|---|---|---|---|---|',
  ...rows.map(({ name, result, seconds }) => `| ${name} | ${scoreText(result.scores.core)} | ${scoreText(result.scores.compat)} | ${scoreText(result.scores.overall)} | ${failed(result)} | ${seconds} s |`),
];
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/kit-table.md', `${lines.join('\n')}\n`);
writeFileSync('bench/results/kit-table.json', `${JSON.stringify({ kitVersion, rows: rows.map(({ name, result, seconds }) => ({ name, seconds, scores: result.scores, checks: result.checks.map(({ id, group, status, message }) => ({ id, group, status, message })) })) }, null, 2)}\n`);
console.log(lines.join('\n'));
