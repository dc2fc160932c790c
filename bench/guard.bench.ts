// The guard's added latency: the same request with and without <guard>ALL</guard>, for a 50-token
// and a 1,000-token input, through the real service (its local model, max_tokens 8, greedy) in a
// child process; sequential requests after a warm-up, p50 and p99, and the ratio to unguarded.
// The cache is bypassed, so every request is generated. Writes bench/results/guard.json.
//   BENCH_REQUESTS (20) per row.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChildServer } from './lib/child-server.ts';
import { quantile } from './lib/http-load.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20);
const KEY = 'sk-bench-guard';
const sentence = 'The committee reviewed the budget, the library hours and the parking plan for next spring. ';
// About 20 tokens a sentence: 2-3 sentences make ~50 tokens, 50 make ~1,000.
const inputs = { '50 tokens': sentence.repeat(2.5 | 0) + 'Summarise.', '1,000 tokens': sentence.repeat(50) + 'Summarise.' };

const server = await startChildServer('dist/src/main.js', { SERVICE_API_KEY: KEY, KEYS_FILE: join(mkdtempSync(join(tmpdir(), 'bench-guard-')), 'keys.json') }, '/v1/models');
const ask = async (system: string, user: string) => {
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${server.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'x-service-bypass-cache': 'true' },
    body: JSON.stringify({ model: 'service', max_tokens: 8, temperature: 0, messages: [{ role: 'system', content: system }, { role: 'user', content: user }] }),
  });
  const body = (await res.json()) as { choices?: { message: { content: string } }[] };
  if (res.status !== 200) throw new Error(`unexpected answer ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  // A harmless request blocked (its input or the model's answer) is a false positive: counted.
  if (body.choices?.[0]?.message.content.startsWith('unsafe')) blocked.push(body.choices[0].message.content);
  return performance.now() - start;
};
const blocked: string[] = [];

const rows: { input: string; guarded: boolean; p50Ms: number; p99Ms: number }[] = [];
try {
  await ask('Be brief. <guard>ALL</guard>', 'warm up'); // the guard's worker and the model load once
  for (const [name, text] of Object.entries(inputs)) {
    for (const guarded of [false, true]) {
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) times.push(await ask(guarded ? 'Be brief. <guard>ALL</guard>' : 'Be brief.', text));
      times.sort((a, b) => a - b);
      rows.push({ input: name, guarded, p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99) });
    }
  }
} finally {
  await server.stop();
}
console.log(`\n${REQUESTS} sequential requests per row, max_tokens 8, the local model\n`);
console.log('| input | unguarded p50 / p99 ms | <guard>ALL</guard> p50 / p99 ms | ratio p50 / p99 |\n|---|---|---|---|');
for (const name of Object.keys(inputs)) {
  const [plain, guarded] = [rows.find((r) => r.input === name && !r.guarded)!, rows.find((r) => r.input === name && r.guarded)!];
  console.log(`| ${name} | ${plain.p50Ms} / ${plain.p99Ms} | ${guarded.p50Ms} / ${guarded.p99Ms} | ${(guarded.p50Ms / plain.p50Ms).toFixed(2)} / ${(guarded.p99Ms / plain.p99Ms).toFixed(2)} |`);
}
console.log(`\nharmless requests blocked (false positives, input or the model's answer): ${blocked.length} ${blocked.join(', ')}`);
writeFileSync('bench/results/guard.json', `${JSON.stringify({ when: new Date().toISOString(), requests: REQUESTS, rows, blocked }, null, 2)}\n`);
