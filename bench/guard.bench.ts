// The guard's added latency: the same request with and without <guard>ALL</guard> (and both
// with x-service-zdr, where the guard keeps no windows and the model no prompt), for a 50-token and a 1,000-token input,
// each sent again every time and new every time, through the real service (its local
// model, max_tokens 8, greedy) in a child process; sequential requests after a warm-up, p50 and
// p99, and the ratios to unguarded. The cache is bypassed, so every request is generated. Writes
// bench/results/guard.json.
//   BENCH_REQUESTS (20) per row.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChildServer } from './lib/child-server.ts';
import { quantile } from './lib/http-load.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20);
const KEY = 'sk-bench-guard';

// Plain sentences of about 20 tokens, no two alike (the guard reads a text sentence by sentence
// and reads a sentence met twice in one request once, so repeating one sentence would measure nothing).
const WHO = ['The committee', 'The library board', 'Our street association', 'The school council', 'The museum staff', 'The city planners', 'The garden club', 'The football league'];
const DID = ['reviewed', 'discussed at length', 'approved', 'postponed', 'summarised'];
const WHAT = ['the budget for the spring fair', 'the new opening hours of the reading room', 'the parking plan near the old station', 'the repairs to the chapel roof', 'the volunteer schedule for the summer', 'the design of the benches in the park'];
const sentence = (n: number) => `${WHO[n % 8]} ${DID[Math.floor(n / 8) % 5]} ${WHAT[Math.floor(n / 40) % 6]} at meeting number ${n + 1}. `;
/** About 20 tokens a sentence: 2-3 make ~50 tokens, 50 make ~1,000; `first` picks which. */
const text = (sentences: number, first = 0) => Array.from({ length: sentences }, (_, i) => sentence(first + i)).join('') + 'Summarise.';

/**
 * Each input's text for the i-th request of the bench: the same every time (as a conversation's earlier turns
 * are resent with each new one: the model's prompt cache and the guard's windows both apply), or
 * new every time (neither does).
 */
const inputs: Record<string, (i: number) => string> = {
  '50 tokens, resent': () => text(2),
  '50 tokens, new each time': (i) => text(2, 2 * (i + 1)),
  '1,000 tokens, resent': () => text(50),
  '1,000 tokens, new each time': (i) => text(50, 5000 + 50 * i),
};
/**
 * Unguarded; guarded; guarded with x-service-zdr, which keeps nothing, so the guard reads every
 * window however often it was sent (the guard without its per-key memory of windows).
 */
const ZDR = { 'x-service-zdr': 'true' };
const variants = [
  { name: 'unguarded', system: 'Be brief.', headers: {} },
  { name: 'guarded', system: 'Be brief. <guard>ALL</guard>', headers: {} },
  // Zero data retention keeps nothing in the model's prompt cache either: its guarded requests are compared with its unguarded ones.
  { name: 'unguarded, zero data retention', system: 'Be brief.', headers: ZDR },
  { name: 'guarded, zero data retention', system: 'Be brief. <guard>ALL</guard>', headers: ZDR },
] as const;

const server = await startChildServer('dist/src/main.js', { SERVICE_API_KEY: KEY, KEYS_FILE: join(mkdtempSync(join(tmpdir(), 'bench-guard-')), 'keys.json') }, '/v1/models');
const ask = async (system: string, user: string, headers: Record<string, string> = {}) => {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true', ...headers },
    body: JSON.stringify({ model: 'service', max_tokens: 8, temperature: 0, messages: [{ role: 'system', content: system }, { role: 'user', content: user }] }),
  });
  const body = (await res.json()) as { choices?: { message: { content: string } }[] };
  if (res.status !== 200) throw new Error(`unexpected answer ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  // A harmless request blocked (its input or the model's answer) is a false positive: counted.
  if (body.choices?.[0]?.message.content.startsWith('unsafe')) blocked.push(body.choices[0].message.content);
  return performance.now() - start;
};
const blocked: string[] = [];

const rows: { input: string; variant: string; p50Ms: number; p99Ms: number }[] = [];
try {
  await ask('Be brief. <guard>ALL</guard>', 'warm up'); // the guard's worker and the model load once
  for (const [input, textOf] of Object.entries(inputs)) {
    for (const [v, variant] of variants.entries()) {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) times.push(await ask(variant.system, textOf(REQUESTS * v + i), variant.headers));
      times.sort((a, b) => a - b);
      rows.push({ input, variant: variant.name, p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99) });
    }
  }
} finally {
  await server.stop();
}
console.log(`\n${REQUESTS} sequential requests per row, max_tokens 8, the local model\n`);
console.log(`| input | ${variants.map((v) => `${v.name} p50 / p99 ms`).join(' | ')} | ratio p50 / p99, guarded | ratio p50 / p99, zero data retention |`);
console.log(`|---|${variants.map(() => '---|').join('')}---|---|`);
for (const input of Object.keys(inputs)) {
  const [plain, guarded, plainZdr, guardedZdr] = variants.map((v) => rows.find((r) => r.input === input && r.variant === v.name)!);
  const ratio = (row: (typeof rows)[number], to: (typeof rows)[number]) => `${(row.p50Ms / to.p50Ms).toFixed(2)} / ${(row.p99Ms / to.p99Ms).toFixed(2)}`;
  console.log(`| ${input} | ${[plain!, guarded!, plainZdr!, guardedZdr!].map((r) => `${r.p50Ms} / ${r.p99Ms}`).join(' | ')} | ${ratio(guarded!, plain!)} | ${ratio(guardedZdr!, plainZdr!)} |`);
}
console.log(`\nharmless requests blocked (false positives, input or the model's answer): ${blocked.length} ${blocked.join(', ')}`);
writeFileSync('bench/results/guard.json', `${JSON.stringify({ when: new Date().toISOString(), requests: REQUESTS, rows, blocked }, null, 2)}\n`);
