// Local engine through the HTTP API vs node-llama-cpp called directly, same model, same run.
// Prints a table and writes bench/results/local-engine.json. Run: make bench
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { getLlama, LlamaChat, LlamaLogLevel } from 'node-llama-cpp';
import OpenAI from 'openai';
import { loadConfig } from '../src/config.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const MAX_TOKENS = Number(process.env.BENCH_MAX_TOKENS ?? 128);
const CONCURRENT_STREAMS = 8;
const PORT = 8099;
const KEY = 'sk-bench';
const PROMPT = 'Write a short story about a robot who learns to paint.';
const config = loadConfig({ ...process.env, CONTEXT_SIZE: '4096', PARALLEL: '1' });
const { modelPath, threads, contextSize } = config.local;

interface Run { ttftMs: number; tokensPerSecond: number; tokens: number }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summarize = (runs: Run[]) => ({
  ttftMs: median(runs.map((r) => r.ttftMs)),
  tokensPerSecond: median(runs.map((r) => r.tokensPerSecond)),
  runs,
});

/** Generation speed after the first token: (tokens - 1) / (end - first). */
const speed = (start: number, first: number, end: number, tokens: number): Run => ({
  ttftMs: first - start,
  tokensPerSecond: (tokens - 1) / ((end - first) / 1000),
  tokens,
});

async function direct(): Promise<Run[]> {
  const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, maxThreads: threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  const context = await model.createContext({ contextSize, sequences: 1, threads });
  const sequence = context.getSequence();
  const runs: Run[] = [];
  // Like the server, the sequence keeps its cache between runs, so both reuse the prompt's prefix.
  for (let i = 0; i < RUNS + 1; i++) {
    const chat = new LlamaChat({ contextSequence: sequence });
    let first = 0;
    let tokens = 0;
    const start = performance.now();
    await chat.generateResponse([{ type: 'user', text: PROMPT }], {
      maxTokens: MAX_TOKENS, temperature: 0,
      onToken: (t) => {
        if (!first) first = performance.now();
        tokens += t.length;
      },
    });
    const run = speed(start, first, performance.now(), tokens);
    chat.dispose({ disposeSequence: false });
    if (i > 0) runs.push(run); // the first run warms up
  }
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return runs;
}

function startServer(parallel: number) {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...process.env, PORT: String(PORT), SERVICE_API_KEY: KEY, KEYS_FILE: '.cache/bench-keys.json', CONTEXT_SIZE: String(contextSize), PARALLEL: String(parallel), VALIDATE_RESPONSES: 'false' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.toString().includes('Chat completion service on') && resolve());
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  const rssMiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  return { ready, rssMiB, stop: () => child.kill('SIGTERM') };
}

const client = new OpenAI({ baseURL: `http://127.0.0.1:${PORT}/v1`, apiKey: KEY, maxRetries: 0 });

async function streamOnce(): Promise<Run> {
  const start = performance.now();
  let first = 0;
  let tokens = 0;
  const stream = await client.chat.completions.create({
    model: 'service', messages: [{ role: 'user', content: PROMPT }], max_tokens: MAX_TOKENS, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  for await (const chunk of stream) {
    if (!first && chunk.choices[0]?.delta.content) first = performance.now();
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
  }
  return speed(start, first, performance.now(), tokens);
}

async function overHttp(): Promise<Run[]> {
  const server = startServer(1);
  await server.ready;
  try {
    const runs: Run[] = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const run = await streamOnce();
      if (i > 0) runs.push(run);
    }
    return runs;
  } finally {
    server.stop();
  }
}

async function memory(): Promise<{ idleMiB: number; peakUnderLoadMiB: number; parallel: number }> {
  const parallel = loadConfig(process.env).local.parallel; // the deployment's default
  const server = startServer(parallel);
  await server.ready;
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const idleMiB = server.rssMiB();
    let peak = idleMiB;
    const sampler = setInterval(() => (peak = Math.max(peak, server.rssMiB())), 100);
    await Promise.all(Array.from({ length: CONCURRENT_STREAMS }, () => streamOnce()));
    clearInterval(sampler);
    return { idleMiB, peakUnderLoadMiB: Math.max(peak, server.rssMiB()), parallel };
  } finally {
    server.stop();
  }
}

const directResult = summarize(await direct());
const httpResult = summarize(await overHttp());
const mem = await memory();
const result = {
  when: new Date().toISOString(),
  model: modelPath.split('/').at(-1),
  settings: { threads, contextSize, maxTokens: MAX_TOKENS, runs: RUNS, temperature: 0 },
  direct: directResult,
  http: httpResult,
  ratios: {
    tokensPerSecond: httpResult.tokensPerSecond / directResult.tokensPerSecond,
    ttft: httpResult.ttftMs / directResult.ttftMs,
  },
  memory: { ...mem, concurrentStreams: CONCURRENT_STREAMS },
};
writeFileSync('bench/results/local-engine.json', JSON.stringify(result, null, 2) + '\n');
const f = (n: number, d = 1) => n.toFixed(d);
console.log(`
local engine, ${result.model}, ${threads} threads, ${MAX_TOKENS} tokens, median of ${RUNS}
                      tokens/s   TTFT ms
node-llama-cpp direct ${f(directResult.tokensPerSecond).padStart(8)}  ${f(directResult.ttftMs, 0).padStart(8)}
through HTTP          ${f(httpResult.tokensPerSecond).padStart(8)}  ${f(httpResult.ttftMs, 0).padStart(8)}
ratio HTTP/direct     ${f(result.ratios.tokensPerSecond, 3).padStart(8)}  ${f(result.ratios.ttft, 3).padStart(8)}
server RSS: idle ${f(mem.idleMiB, 0)} MiB, peak under ${CONCURRENT_STREAMS} concurrent streams ${f(mem.peakUnderLoadMiB, 0)} MiB (PARALLEL=${mem.parallel})
written to bench/results/local-engine.json`);
