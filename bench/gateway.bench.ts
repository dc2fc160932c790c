// The gateway path's cost, side by side in one run: this service in production mode in front of an
// instant upstream, against bare node:http doing the least a gateway can (bench/gateway/). JSON
// and streamed answers, and the service's cache hit (read against bare's JSON); the most each sustains at 32 connections, with the CPU each request costs
// the server process; the latency it adds at one connection and at 32 connections paced at half
// the service's capacity; and the service's heap over a soak. Each process runs on its own; this
// one only sends load. Writes bench/results/gateway.json.
// This machine's timings drift between runs (a shared VM), so each cell is measured BENCH_REPEATS
// times, the servers taking turns, and the median of each figure is reported.
//   BENCH_SECONDS (10) per measurement, BENCH_REPEATS (3), BENCH_SOAK_SECONDS (60; 600 for the
//   10-minute claim), BENCH_SOAK_ONLY=1 (the soak alone, to bench/results/gateway-soak.json).
// With BENCH_NODE_FLAGS (flag sets separated by `;`, e.g. `--max-semi-space-size=32;--max-semi-space-size=64`)
// it compares node flags instead: in each mode of BENCH_FLAG_MODES (json,hit) the service with node's
// defaults and with each flag set run at once, and in each of BENCH_REPEATS rounds each is loaded in
// turn for BENCH_SECONDS at 32 connections (the order rotating), or with BENCH_FLAGS_TOGETHER=1 all
// at once at 16 connections each, so that the machine's drift hits them alike; CPU per request is
// read per round against the defaults' in the same round. Writes bench/results/gateway-flags.json.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChildServer, type ProcessStats, startChildServer } from './lib/child-server.ts';
import { closedLoop, type LoadResult, type LoadTarget, paced, quantile } from './lib/http-load.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 60);
const REPEATS = Number(process.env.BENCH_REPEATS ?? 3);
/** Only the soak (the 10-minute claim, with BENCH_SOAK_SECONDS=600), written to bench/results/gateway-soak.json. */
const SOAK_ONLY = process.env.BENCH_SOAK_ONLY === '1';
/** Flag comparison: load the variants all at once in each round (16 connections each) instead of in turn. */
const TOGETHER = process.env.BENCH_FLAGS_TOGETHER === '1';
const CONNECTIONS = 32;
const KEY = 'sk-bench-gateway';

/** `hit`: the service answering the same JSON request every time, from its verified cache (issue 26's third goal). */
type Mode = 'json' | 'sse' | 'hit';
/**
 * `floor` and `floor+validator` (JSON only) are Express with the service's body parser, and with
 * the contract's validator, answering a fixed completion at once: the cost of the framework the
 * service is built on before any of its own work, for reading the service's figures against.
 * `service` is the build that `make run` serves (dist/); `service-tsx` (JSON only) the same
 * sources run through tsx, as before the build step, to show what the build saves. `fixed` is
 * the instant upstream loaded directly (bare node:http, prepared bytes): the issue's floor row.
 */
type Server = 'fixed' | 'bare' | 'service' | 'service-tsx' | 'floor' | 'floor+validator';

function targetOf(port: number, mode: Mode): LoadTarget {
  return {
    port,
    path: '/v1/chat/completions',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    // Each request differs, as real ones do: the service's cache misses and stores, as in production.
    body: (i) => JSON.stringify({
      model: 'service', max_tokens: 32, ...(mode === 'sse' ? { stream: true } : {}),
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: `Say something about the number ${mode === 'hit' ? 0 : i}.` }],
    }),
    ok: (status, body) => status === 200 && (mode === 'sse'
      ? body.endsWith('data: [DONE]\n\n') && body.includes('word19') && !body.includes('"error"')
      : body.includes('word19') && body.includes('"finish_reason":"stop"')),
  };
}

async function startServer(server: Server, upstreamUrl: string, nodeFlags: string[] = []): Promise<ChildServer> {
  // The instant upstream itself, loaded directly: bare node:http answering prepared bytes, the
  // issue's "floor" row, which shows how fast this machine is against the one the goals were set on.
  if (server === 'fixed') return startChildServer('bench/gateway/instant-upstream.ts', {});
  if (server === 'bare') return startChildServer('bench/gateway/bare-proxy.ts', { UPSTREAM_BASE_URL: upstreamUrl });
  if (server === 'floor' || server === 'floor+validator') return startChildServer('bench/gateway/express-floor.ts', { VALIDATE: server === 'floor' ? '0' : '1' });
  const dir = mkdtempSync(join(tmpdir(), 'bench-gateway-'));
  // Loaded once `/readyz` answers 200: the guard's classifiers and the tasks' models load in worker
  // processes once the service listens, taking both cores for seconds, and a measurement taken
  // meanwhile would charge that contention to the gateway path.
  return startChildServer(server === 'service' ? 'dist/src/main.js' : 'src/main.ts', {
    NODE_ENV: 'production', UPSTREAM_BASE_URL: upstreamUrl, SERVICE_API_KEY: KEY, KEYS_FILE: join(dir, 'keys.json'),
  }, '/readyz', nodeFlags, (status) => status === 200);
}

interface Cell {
  server: Server; mode: Mode;
  /** Saturated at 32 connections. */
  rps: number; cpuMicrosPerRequest: number;
  /** In a median cell, each run's CPU per request, in the order run: how far the machine moved. */
  cpuMicrosPerRequestRuns?: number[];
  /** One connection, closed loop. */
  single: { p50Ms: number; p99Ms: number };
  /** 32 connections at a fixed rate (half the service's capacity in this mode). */
  paced: { rate: number; p50Ms: number; p99Ms: number };
  errors: number;
}

/** The server's CPU over the load, without the full collections the two readings force (process-stats.ts). */
const cpuPerRequest = (before: ProcessStats, after: ProcessStats, result: LoadResult) =>
  Math.round((after.cpuMicrosBeforeGc - before.cpuMicros) / result.requests);

async function measure(server: Server, mode: Mode, upstreamUrl: string, pacedRate: number | undefined): Promise<Cell> {
  const child = await startServer(server, upstreamUrl);
  const target = targetOf(child.port, mode);
  try {
    await closedLoop(target, CONNECTIONS, 3); // warm-up: JIT, pools
    const before = await child.stats();
    const saturated = await closedLoop(target, CONNECTIONS, SECONDS);
    const after = await child.stats();
    const single = await closedLoop(target, 1, SECONDS);
    const rate = pacedRate ?? Math.max(1, Math.round(saturated.rps / 2));
    const steady = await paced(target, CONNECTIONS, rate, SECONDS);
    return {
      server, mode,
      rps: saturated.rps, cpuMicrosPerRequest: cpuPerRequest(before, after, saturated),
      single: { p50Ms: quantile(single.latencies, 0.5), p99Ms: quantile(single.latencies, 0.99) },
      paced: { rate, p50Ms: quantile(steady.latencies, 0.5), p99Ms: quantile(steady.latencies, 0.99) },
      errors: saturated.errors + single.errors + steady.errors,
    };
  } finally {
    await child.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Each figure's median over the runs (the paced rate is the same in all of them). */
function medianCell(runs: Cell[]): Cell {
  const of = (pick: (c: Cell) => number) => median(runs.map(pick));
  return {
    server: runs[0]!.server, mode: runs[0]!.mode,
    rps: of((c) => c.rps), cpuMicrosPerRequest: of((c) => c.cpuMicrosPerRequest),
    cpuMicrosPerRequestRuns: runs.map((c) => c.cpuMicrosPerRequest),
    single: { p50Ms: of((c) => c.single.p50Ms), p99Ms: of((c) => c.single.p99Ms) },
    paced: { rate: runs[0]!.paced.rate, p50Ms: of((c) => c.paced.p50Ms), p99Ms: of((c) => c.paced.p99Ms) },
    errors: runs.reduce((sum, c) => sum + c.errors, 0),
  };
}

/** The service's heap after a full collection, every 10 s under load at 32 connections. */
async function soak(upstreamUrl: string): Promise<{ seconds: number; heapMiB: number[]; rssMiB: number[]; errors: number }> {
  const child = await startServer('service', upstreamUrl);
  const target = targetOf(child.port, 'json');
  const heapMiB: number[] = [];
  const rssMiB: number[] = [];
  let errors = 0;
  const mib = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1));
  try {
    for (let t = 0; t < SOAK_SECONDS; t += 10) {
      errors += (await closedLoop(target, CONNECTIONS, Math.min(10, SOAK_SECONDS - t))).errors;
      const stats = await child.stats();
      heapMiB.push(mib(stats.heapUsed));
      rssMiB.push(mib(stats.rss));
    }
  } finally {
    await child.stop();
  }
  return { seconds: SOAK_SECONDS, heapMiB, rssMiB, errors };
}

interface FlagRound {
  flags: string; round: number; rps: number; cpuMicrosPerRequest: number;
  /** This round's CPU per request over the defaults' in the same round. */
  ratio: number;
  /** GC time per request (all collections, and young-generation ones alone), as V8 reports it. */
  gcMicrosPerRequest: number; minorGcMicrosPerRequest: number; minorGcs: number;
  /** Resident set after the round's full collection, and the largest so far. */
  rssMiB: number; maxRssMiB: number;
  errors: number;
}

/** The service with node's defaults against the same with each flag set, in alternating rounds. */
async function compareFlags(flagSets: string[], modes: Mode[], upstreamUrl: string): Promise<Record<string, FlagRound[]>> {
  const variants = ['', ...flagSets];
  const label = (flags: string) => flags || '(defaults)';
  const mib = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1));
  const results: Record<string, FlagRound[]> = {};
  for (const mode of modes) {
    const children = await Promise.all(variants.map((flags) => startServer('service', upstreamUrl, flags.split(' ').filter(Boolean))));
    const rounds: FlagRound[] = [];
    try {
      for (const child of children) await closedLoop(targetOf(child.port, mode), CONNECTIONS, 3); // warm-up: JIT, pools
      for (let round = 1; round <= REPEATS; round++) {
        const measured = new Map<number, Omit<FlagRound, 'ratio'>>();
        const load = async (i: number, connections: number) => {
          const child = children[i]!;
          const before = await child.stats();
          const result = await closedLoop(targetOf(child.port, mode), connections, SECONDS);
          const after = await child.stats();
          const per = (micros: number) => Math.round(micros / result.requests);
          measured.set(i, {
            flags: label(variants[i]!), round, rps: result.rps, cpuMicrosPerRequest: cpuPerRequest(before, after, result),
            gcMicrosPerRequest: per(after.gcMicros - before.gcMicros), minorGcMicrosPerRequest: per(after.minorGcMicros - before.minorGcMicros),
            minorGcs: after.minorGcCount - before.minorGcCount, rssMiB: mib(after.rss), maxRssMiB: mib(after.maxRss), errors: result.errors,
          });
        };
        if (TOGETHER) await Promise.all(variants.map((_, i) => load(i, CONNECTIONS / 2)));
        else for (const i of variants.map((_, i) => (i + round - 1) % variants.length)) await load(i, CONNECTIONS);
        const base = measured.get(0)!.cpuMicrosPerRequest;
        for (let i = 0; i < variants.length; i++) {
          const m = measured.get(i)!;
          rounds.push({ ...m, ratio: Number((m.cpuMicrosPerRequest / base).toFixed(3)) });
          console.error(`${mode} round ${round}: ${m.flags}: ${m.rps} req/s, ${m.cpuMicrosPerRequest} µs/request (${(m.cpuMicrosPerRequest / base).toFixed(2)}), `
            + `GC ${m.gcMicrosPerRequest} µs/request (young ${m.minorGcMicrosPerRequest}, ${m.minorGcs} scavenges), RSS ${m.rssMiB} MiB (max ${m.maxRssMiB}), errors ${m.errors}`);
        }
      }
    } finally {
      await Promise.all(children.map((child) => child.stop()));
    }
    results[mode] = rounds;
  }
  console.log(`\n${TOGETHER ? `all at once, ${CONNECTIONS / 2} connections each` : `in turn, ${CONNECTIONS} connections`} saturated, ${SECONDS} s per round, `
    + `${REPEATS} rounds; CPU per request over the defaults' in the same round\n`);
  console.log('| mode | node flags | CPU µs/request, per round | ratio, per round | median ratio | GC µs/request (young), median | RSS after GC, last round / max MiB | errors |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [mode, rounds] of Object.entries(results)) {
    for (const flags of variants.map(label)) {
      const of = rounds.filter((r) => r.flags === flags);
      const last = of[of.length - 1]!;
      console.log(`| ${mode} | ${flags} | ${of.map((r) => r.cpuMicrosPerRequest).join(', ')} | ${of.map((r) => r.ratio.toFixed(2)).join(', ')} | `
        + `${median(of.map((r) => r.ratio)).toFixed(2)} | ${median(of.map((r) => r.gcMicrosPerRequest))} (${median(of.map((r) => r.minorGcMicrosPerRequest))}) | `
        + `${last.rssMiB} / ${Math.max(...of.map((r) => r.maxRssMiB))} | ${of.reduce((sum, r) => sum + r.errors, 0)} |`);
    }
  }
  return results;
}

async function main(): Promise<void> {
  const upstream = await startChildServer('bench/gateway/instant-upstream.ts', {});
  const upstreamUrl = `http://127.0.0.1:${upstream.port}/v1`;
  const flagSets = (process.env.BENCH_NODE_FLAGS ?? '').split(';').map((f) => f.trim()).filter(Boolean);
  if (flagSets.length > 0) {
    const modes = (process.env.BENCH_FLAG_MODES ?? 'json,hit').split(',') as Mode[];
    const rounds = await compareFlags(flagSets, modes, upstreamUrl);
    await upstream.stop();
    writeFileSync('bench/results/gateway-flags.json', `${JSON.stringify({ when: new Date().toISOString(), together: TOGETHER, connections: TOGETHER ? CONNECTIONS / 2 : CONNECTIONS, seconds: SECONDS, rounds }, null, 2)}\n`);
    return;
  }
  if (SOAK_ONLY) {
    const heap = await soak(upstreamUrl);
    await upstream.stop();
    console.log(`service heap after GC, every 10 s of load for ${heap.seconds} s (MiB): ${heap.heapMiB.join(' ')}; errors ${heap.errors}`);
    writeFileSync('bench/results/gateway-soak.json', `${JSON.stringify({ when: new Date().toISOString(), connections: CONNECTIONS, heap }, null, 2)}\n`);
    return;
  }
  const cells: Cell[] = [];
  for (const mode of ['json', 'sse', 'hit'] as const) {
    const servers: Server[] = mode === 'json' ? ['service', 'service-tsx', 'bare', 'fixed', 'floor', 'floor+validator'] : mode === 'sse' ? ['service', 'bare', 'fixed'] : ['service'];
    const runs = new Map<Server, Cell[]>(servers.map((s) => [s, []]));
    for (let i = 0; i < REPEATS; i++) {
      for (const server of servers) runs.get(server)!.push(await measure(server, mode, upstreamUrl, runs.get('service')![0]?.paced.rate));
    }
    cells.push(...servers.map((server) => medianCell(runs.get(server)!)));
  }
  const heap = SOAK_SECONDS > 0 ? await soak(upstreamUrl) : undefined;
  await upstream.stop();

  console.log(`\n${CONNECTIONS} connections saturated, ${SECONDS} s per measurement, median of ${REPEATS} runs; an instant upstream\n`);
  console.log('| mode | server | req/s | ratio to bare | CPU µs/request (each run) | p50 ms, 1 connection (added) | p99 ms, 1 connection (added) | p99 ms, 32 connections paced (added) | errors |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const cell of cells) {
    // A cache hit is read against bare's JSON figures: bare has no cache.
    const bare = cells.find((c) => c.mode === (cell.mode === 'hit' ? 'json' : cell.mode) && c.server === 'bare')!;
    const added = (a: number, b: number) => (cell.server.startsWith('service') ? ` (+${(a - b).toFixed(2)})` : '');
    console.log(`| ${cell.mode} | ${cell.server} | ${cell.rps} | ${(cell.rps / bare.rps).toFixed(2)} | ${cell.cpuMicrosPerRequest} (${cell.cpuMicrosPerRequestRuns!.join(', ')}) | `
      + `${cell.single.p50Ms}${added(cell.single.p50Ms, bare.single.p50Ms)} | `
      + `${cell.single.p99Ms}${added(cell.single.p99Ms, bare.single.p99Ms)} | `
      + `${cell.paced.p99Ms}${added(cell.paced.p99Ms, bare.paced.p99Ms)} at ${cell.paced.rate}/s | ${cell.errors} |`);
  }
  if (heap) console.log(`\nservice heap after GC, every 10 s of load for ${heap.seconds} s (MiB): ${heap.heapMiB.join(' ')}; errors ${heap.errors}`);
  writeFileSync('bench/results/gateway.json', `${JSON.stringify({ when: new Date().toISOString(), connections: CONNECTIONS, seconds: SECONDS, repeats: REPEATS, cells, heap }, null, 2)}\n`);
}

await main();
