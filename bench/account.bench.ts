// The account layer's cost, side by side in one run: the verified cache's hit path against bare
// node:http answering the same body, on the embedded store and on Redis; and the quota stage
// (reservation, rate limits, settlement) on an uncached request through the upstream engine to an
// instant fake upstream, with and without credits and limits on the key. Each server runs in a
// child process of its own; this process only sends load. Needs REDIS_URL for the Redis rows
// (`make bench-account` provides one). Writes bench/results/account.json.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { closedLoop, quantile } from './lib/http-load.ts';
import { createInterface } from 'node:readline';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/**
 * On a machine loaded by other work one run of each row is noise: BENCH_ROUNDS runs the rows
 * round-robin that many times and reports each row's median round, so rows compared were
 * measured under the same load. BENCH_MODES (comma-separated) picks rows; bare is always first.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const ONLY = process.env.BENCH_MODES?.split(',').filter((m) => m !== '');
const BODY = JSON.stringify({ model: 'service', max_tokens: 16, messages: [{ role: 'user', content: 'hello there' }] });

type Mode = 'bare' | 'hit-embedded' | 'hit-redis' | 'upstream-free-embedded' | 'upstream-quota-embedded' | 'upstream-free-redis' | 'upstream-quota-redis';

// --- the servers (child processes) -----------------------------------------------------------
async function serve(mode: Mode): Promise<void> {
  const { startTestServer } = await import('../src/testing/test-server.ts');
  const { createScriptedEngine, echoScript } = await import('../src/engines/scripted-engine.ts');
  if (mode === 'bare') {
    const server = await startTestServer({ engine: createScriptedEngine(echoScript), validateResponses: false });
    const answer = await (await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: BODY, headers: headers(undefined, false) })).text();
    await server.close();
    const bare = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/json' }).end(answer));
    });
    bare.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (bare.address() as { port: number }).port })));
    return;
  }
  const redis = mode.endsWith('redis');
  const store = redis
    ? (await import('../src/store/redis-store.ts')).createRedisStore({ url: process.env.REDIS_URL!, keyPrefix: `bench-${mode}:` })
    : undefined;
  let engine = createScriptedEngine(echoScript);
  if (mode.startsWith('upstream')) {
    const { startFakeUpstream, sendStream, delta } = await import('../src/testing/fake-upstream.ts');
    const upstream = await startFakeUpstream((_body, res) => sendStream(res, [
      delta({ role: 'assistant', content: '' }), delta({ content: 'hello' }), delta({ content: ' there' }),
      { ...delta({}, 'stop'), usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } },
    ]));
    const { createEngine } = await import('../src/wiring/create-engine.ts');
    const { loadConfig } = await import('../src/config.ts');
    engine = await createEngine(loadConfig({ UPSTREAM_BASE_URL: upstream.baseUrl, UPSTREAM_CONCURRENCY: '256', QUEUE_MAX_WAITING: '1000' }));
  }
  const server = await startTestServer({
    engine, validateResponses: false, ...(store ? { store } : {}),
    quota: { prices: { prompt: 1, completion: 2 }, defaults: { rpm: null, tpm: null } },
  });
  let key: string | undefined;
  if (mode.startsWith('upstream-quota')) {
    key = (await server.keys.create('bench', { credits: 1_000_000_000, rpm: 100_000_000, tpm: 1_000_000_000 })).key;
  }
  if (mode.startsWith('hit')) await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: BODY, headers: headers(undefined, false) });
  console.log(JSON.stringify({ port: new URL(server.baseUrl).port, key }));
}

function headers(key: string | undefined, bypassCache: boolean): Record<string, string> {
  return {
    Authorization: `Bearer ${key ?? 'sk-test-key'}`, 'Content-Type': 'application/json',
    ...(bypassCache ? { 'x-service-bypass-cache': 'true' } : {}),
  };
}

// --- the load (this process) -----------------------------------------------------------------
interface Row { mode: Mode; requests: number; rps: number; p50Ms: number; p99Ms: number; errors: number }

async function load(mode: Mode): Promise<Row> {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--serve', mode], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'production' } });
  const first = await createInterface({ input: child.stdout! })[Symbol.asyncIterator]().next();
  const { port, key } = JSON.parse(first.value as string) as { port: number; key?: string };
  const target = { port: Number(port), path: '/v1/chat/completions', headers: headers(key, mode.startsWith('upstream')), body: () => BODY, ok: (status: number) => status === 200 };
  await closedLoop(target, 1, 1); // warm-up
  const result = await closedLoop(target, CONNECTIONS, SECONDS);
  child.kill();
  const { latencies } = result;
  return { mode, requests: result.requests, rps: result.rps, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), errors: result.errors };
}

async function main(): Promise<void> {
  const modes: Mode[] = ['bare', 'hit-embedded', 'upstream-free-embedded', 'upstream-quota-embedded'];
  if (process.env.REDIS_URL) modes.push('hit-redis', 'upstream-free-redis', 'upstream-quota-redis');
  const chosen = ONLY ? modes.filter((m) => m === 'bare' || ONLY.includes(m)) : modes;
  const rounds = new Map<Mode, Row[]>(chosen.map((m) => [m, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of chosen) rounds.get(mode)!.push(await load(mode));
  }
  const median = (runs: Row[]) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor((runs.length - 1) / 2)]!;
  const rows = chosen.map((m) => median(rounds.get(m)!));
  const bare = rows[0]!;
  const byMode = new Map(rows.map((r) => [r.mode, r]));
  console.log(`\n${CONNECTIONS} connections, ${SECONDS} s each, JSON answers, median of ${ROUNDS} round(s)\n`);
  console.log('| server | req/s | ratio to bare | p50 ms | p99 ms | added p50 / p99 ms vs bare | errors |\n|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.mode} | ${r.rps} | ${(r.rps / bare.rps).toFixed(3)} | ${r.p50Ms} | ${r.p99Ms} | ${(r.p50Ms - bare.p50Ms).toFixed(2)} / ${(r.p99Ms - bare.p99Ms).toFixed(2)} | ${r.errors} |`);
  }
  for (const store of ['embedded', 'redis'] as const) {
    const free = byMode.get(`upstream-free-${store}`);
    const metered = byMode.get(`upstream-quota-${store}`);
    if (!free || !metered) continue;
    console.log(`quota stage (${store}): req/s with credits and limits / without = ${(metered.rps / free.rps).toFixed(3)}, added p50 ${(metered.p50Ms - free.p50Ms).toFixed(2)} ms`);
    // Per round too: the two rows of one round ran seconds apart, under the most similar load.
    const frees = rounds.get(`upstream-free-${store}`)!;
    const paired = rounds.get(`upstream-quota-${store}`)!.map((m, i) => m.rps / frees[i]!.rps);
    if (paired.length > 1) console.log(`  per round: ${paired.map((r) => r.toFixed(3)).join(', ')}`);
  }
  writeFileSync('bench/results/account.json', `${JSON.stringify({ when: new Date().toISOString(), connections: CONNECTIONS, seconds: SECONDS, rows }, null, 2)}\n`);
}

if (process.argv[2] === '--serve') await serve(process.argv[3] as Mode);
else await main();
