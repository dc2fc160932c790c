// How hostile inputs hurt the server's event loop: for each case, the real tasks serve one hostile
// request in-process while a well-behaved caller asks for a plain chat every 50 ms.
// Each case runs in its own child process, so a crash or a hang is recorded, not fatal.
//
// Run:  node --import tsx bench/hostile.bench.ts [--out bench/results/hostile.json] [--cases a,b] [--cap-s 240]
// Child: node --import tsx bench/hostile.bench.ts --case NAME [--cap-s 240]  (prints one JSON line)
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, writeSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const SCRIPT = fileURLToPath(import.meta.url);
const ROOT = join(dirname(SCRIPT), '..');
const CHILD_TIMEOUT_MS = 5 * 60_000;
const GOOD_EVERY_MS = 50;
const BASELINE_MS = 2000;
const RESULT_PREFIX = '{"case":';

/** What one case reports (the parent adds crashed/timed-out cases itself). */
export interface CaseResult {
  case: string;
  /** HTTP status of the hostile request, or `timeout` (cap reached), `error`, `crashed`, `-` (baseline). */
  status: number | string;
  hostileMs: number | null;
  loopP99Ms: number | null;
  loopMaxMs: number | null;
  goodRequests: number;
  goodP99Ms: number | null;
  /** One sequential caller meets a block once: p99 can hide what max shows. */
  goodMaxMs?: number | null;
  crashed: boolean;
  timedOut?: boolean;
  goodFailures?: number;
  note?: string;
}

type Warm = 'ocr-image' | 'detect' | 'ocr-pdf';
interface HostileCase {
  name: string;
  warm: Warm[];
  /** The hostile request's body; none for the baseline. */
  body?: () => Promise<unknown>;
}

const openSchema = { type: 'json_schema', json_schema: { name: 'task', schema: {} } };
const taskRequest = (task: string, part: object, text = 'What is in this file?') => ({
  model: 'service',
  response_format: openSchema,
  messages: [{ role: 'system', content: `<task>${task}</task>` }, { role: 'user', content: [{ type: 'text', text }, part] }],
});
const imagePart = (url: string) => ({ type: 'image_url', image_url: { url } });
const filePart = (filename: string, url: string) => ({ type: 'file', file: { filename, file_data: url } });
const GOOD = { model: 'service', messages: [{ role: 'user', content: 'hello' }] };
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

async function hostile() {
  return import('../src/testing/hostile-inputs.ts');
}
async function fixtures() {
  return import('../src/testing/fixtures.ts');
}

const CASES: HostileCase[] = [
  { name: 'baseline', warm: [] },
  {
    name: 'png-16000', warm: ['detect'],
    body: async () => taskRequest('object_detection', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(16000, 16000)))),
  },
  {
    name: 'png-8000', warm: ['detect'],
    body: async () => taskRequest('object_detection', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(8000, 8000)))),
  },
  {
    name: 'png-8000-ocr', warm: ['ocr-image'],
    body: async () => taskRequest('ocr', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(8000, 8000)))),
  },
  // Just under IMAGE_MAX_PIXELS (40 M): accepted, so decoding and inference really run (off the loop).
  {
    name: 'png-6000-detect', warm: ['detect'],
    body: async () => taskRequest('object_detection', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(6000, 6000)))),
  },
  {
    name: 'png-6000-ocr', warm: ['ocr-image'],
    body: async () => taskRequest('ocr', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(6000, 6000)))),
  },
  {
    name: 'png-6000-gui', warm: ['ocr-image'],
    body: async () => taskRequest('gui_detection', imagePart((await fixtures()).dataUrl('image/png', await (await hostile()).hugePng(6000, 6000)))),
  },
  {
    name: 'pdf-bomb', warm: ['ocr-pdf'],
    body: async () => taskRequest('ocr', filePart('bomb.pdf', (await fixtures()).dataUrl('application/pdf', await (await hostile()).deflateBombPdf(300_000_000)))),
  },
  // A 2-hour video of a few KB: refused from its length, before any frame is decoded.
  {
    name: 'video-2h', warm: [],
    body: async () => taskRequest('speech_to_text', filePart('film.mp4', (await fixtures()).dataUrl('video/mp4', (await hostile()).longVideo(7200)))),
  },
  // Accepted: a 10-minute 640×360 video, so probing and seeking to 8 frames really run (off the loop).
  {
    name: 'video-10min-ocr', warm: ['ocr-image'],
    body: async () => taskRequest('ocr', filePart('talk.mp4', (await fixtures()).dataUrl('video/mp4', (await hostile()).busyVideo(600)))),
  },
  // A 1 GiB part in a 1 MB docx: refused from the zip's directory, inflating nothing.
  {
    name: 'docx-bomb', warm: [],
    body: async () => taskRequest('ocr', filePart('report.docx', (await fixtures()).dataUrl(DOCX, (await import('../src/testing/office-fixtures.ts')).zipBombDocx(1024 ** 3)))),
  },
  // The same, with a directory that says 1000 bytes: the parser, in its worker, stops at the real count.
  {
    name: 'docx-liar', warm: [],
    body: async () => taskRequest('ocr', filePart('report.docx', (await fixtures()).dataUrl(DOCX, (await import('../src/testing/office-fixtures.ts')).liarDocx(1024 ** 3)))),
  },
  {
    name: 'pdf-60-blank', warm: ['ocr-pdf'],
    body: async () => taskRequest('ocr', filePart('blank.pdf', (await fixtures()).dataUrl('application/pdf', await (await hostile()).blankPagesPdf(60)))),
  },
  ...[
    { name: 'task-spaces', tag: 'task', n: 1200, whitespace: ' ' },
    { name: 'guard-tabs', tag: 'guard', n: 1200, whitespace: '\t' },
    { name: 'task-spaces-20k', tag: 'task', n: 20_000, whitespace: ' ' },
  ].map(({ name, tag, n, whitespace }) => ({
    name, warm: [] as Warm[],
    body: async () => ({
      model: 'service',
      messages: [{ role: 'system', content: (await hostile()).spacesAfterTag(tag, n, whitespace) }, { role: 'user', content: 'hello' }],
    }),
  })),
  {
    name: 'moa-marker', warm: [],
    body: async () => ({
      model: 'service',
      messages: [{
        role: 'user',
        content: [
          filePart('hello.txt', (await fixtures()).dataUrl('text/plain', Buffer.from('hello'))),
          { type: 'text', text: (await hostile()).repeatedAttachmentMarker(20_000) },
        ],
      }],
    }),
  },
];

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const capMs = Number(option('cap-s') ?? 240) * 1000;
const round = (ms: number | null | undefined) => (ms == null || !Number.isFinite(ms) ? null : Math.round(ms * 10) / 10);
const p99 = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1]! : null);

// ---------------------------------------------------------------------------------------------
// The child: one case.

/**
 * A thread that answers for the main one when its event loop is blocked past the cap (a timer on
 * the main thread cannot fire then): it prints the case's line itself and kills the process.
 */
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { cells, startedAt, deadline, name } = workerData;
(() => {
for (;;) {
  const left = deadline - Date.now();
  if (Atomics.load(cells, 0) !== 0) return;
  if (left <= 0) break;
  Atomics.wait(cells, 0, 0, left);
}
if (Atomics.exchange(cells, 0, 2) === 0) {
  const now = Date.now();
  writeSync(1, JSON.stringify({
    case: name, status: 'timeout', hostileMs: now - startedAt, loopP99Ms: null,
    loopMaxMs: now - (startedAt + Atomics.load(cells, 1)), goodRequests: Atomics.load(cells, 2), goodP99Ms: null,
    crashed: false, timedOut: true,
    note: 'event loop still blocked at the cap: printed by a watchdog thread, process killed; loop max is a lower bound',
  }) + '\\n');
  process.kill(process.pid, 'SIGKILL');
}
})();
`;

function emit(result: CaseResult): void {
  writeSync(1, `${JSON.stringify(result)}\n`);
}

async function runCase(name: string): Promise<void> {
  const spec = CASES.find((c) => c.name === name);
  if (!spec) throw new Error(`unknown case ${name}; cases: ${CASES.map((c) => c.name).join(', ')}`);
  const { loadConfig } = await import('../src/config.ts');
  const { createTasks, attachmentLimitsOf } = await import('../src/tasks/create-tasks.ts');
  const { createScriptedEngine, echoScript } = await import('../src/engines/scripted-engine.ts');
  const { startTestServer, postCompletion } = await import('../src/testing/test-server.ts');
  const { renderTextImage, textPdf, scannedPdf, dataUrl } = await fixtures();

  const config = loadConfig({ ...process.env });
  const engine = createScriptedEngine(echoScript);
  // Synchronous today; awaited (and closed if it can be) so the bench also runs if that changes.
  const tasks = await createTasks(config, engine);
  const server = await startTestServer({ engine, tasks, attachmentLimits: attachmentLimitsOf(config), bodyLimitBytes: config.bodyLimitBytes });

  const post = async (body: unknown) => {
    const res = await postCompletion(server.baseUrl, body);
    const text = await res.text();
    return { status: res.status, text };
  };
  const warmed = async (label: string, body: unknown) => {
    const { status, text } = await post(body);
    if (status !== 200) throw new Error(`warm-up ${label} answered ${status}: ${text.slice(0, 300)}`);
  };

  // Warm every path the case uses, so that first-use costs (models, workers, pdf.js) are not measured.
  await warmed('chat', GOOD);
  const small = await renderTextImage(['Warm up 4721']);
  if (spec.warm.includes('ocr-image')) await warmed('ocr image', taskRequest('ocr', imagePart(dataUrl('image/png', small))));
  if (spec.warm.includes('detect')) await warmed('object detection', taskRequest('object_detection', imagePart(dataUrl('image/png', small))));
  if (spec.warm.includes('ocr-pdf')) {
    await warmed('ocr text pdf', taskRequest('ocr', filePart('text.pdf', dataUrl('application/pdf', await textPdf(['Warm up 4721'])))));
    await warmed('ocr scanned pdf', taskRequest('ocr', filePart('scan.pdf', dataUrl('application/pdf', await scannedPdf(['Warm up 4721'])))));
  }
  const hostileBody = spec.body ? JSON.stringify(await spec.body()) : undefined;

  // cells: [0] done (0 running, 1 main answered, 2 watchdog answered), [1] heartbeat ms since start, [2] good requests.
  const cells = new Int32Array(new SharedArrayBuffer(12));
  const startedAt = Date.now();
  const watchdog = new Worker(WATCHDOG, { eval: true, workerData: { cells, startedAt, deadline: startedAt + capMs + 5000, name } });
  await new Promise((resolve) => watchdog.once('online', resolve));
  watchdog.unref();
  const heartbeat = setInterval(() => Atomics.store(cells, 1, Date.now() - startedAt), 10);

  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  await sleep(50); // the histogram drops its first interval: let it take a few before the hostile request
  const start = performance.now();
  let outcome: { status: number | string; ms: number; note?: string } | undefined;
  let stop = false;
  if (hostileBody !== undefined) {
    writeSync(1, `${JSON.stringify({ event: 'hostile-start' })}\n`);
    const hostileDone = post(hostileBody).then(
      ({ status, text }) => ({ status, ms: performance.now() - start, ...(status !== 200 ? { note: text.slice(0, 200) } : {}) }),
      (err: Error) => ({ status: 'error', ms: performance.now() - start, note: String(err.cause ?? err.message).slice(0, 200) }),
    );
    const capped = sleep(capMs).then(() => ({ status: 'timeout', ms: performance.now() - start, note: `no answer within ${capMs / 1000} s` }));
    void Promise.race([hostileDone, capped]).then((o) => {
      outcome = o;
      stop = true;
    });
  } else {
    void sleep(BASELINE_MS).then(() => (stop = true));
  }

  // A good request is due 50 ms after the previous one was due (or at its answer, if that came
  // later); its latency counts from when it was due, so a block that falls between two requests
  // (the caller's own timer waiting on the blocked loop) is counted too, not omitted.
  const latencies: number[] = [];
  let failures = 0;
  let due = performance.now();
  while (!stop) {
    try {
      if ((await post(GOOD)).status !== 200) failures++;
    } catch {
      failures++;
    }
    const answered = performance.now();
    latencies.push(answered - due);
    Atomics.store(cells, 2, latencies.length);
    due = Math.max(answered, due + GOOD_EVERY_MS);
    if (due > answered && !stop) await sleep(due - answered);
  }
  await sleep(20); // one more loop turn, so a block that ended with the hostile answer is sampled
  loop.disable();
  clearInterval(heartbeat);

  if (Atomics.compareExchange(cells, 0, 0, 1) !== 0) return; // the watchdog has answered already
  Atomics.notify(cells, 0);
  emit({
    case: name,
    status: outcome?.status ?? '-',
    hostileMs: round(outcome?.ms ?? null),
    loopP99Ms: round(loop.percentile(99) / 1e6),
    loopMaxMs: round(loop.max / 1e6),
    goodRequests: latencies.length,
    goodP99Ms: round(p99(latencies)),
    goodMaxMs: round(latencies.length ? Math.max(...latencies) : null),
    crashed: false,
    ...(outcome?.status === 'timeout' ? { timedOut: true } : {}),
    ...(failures ? { goodFailures: failures } : {}),
    ...(outcome?.note ? { note: outcome.note } : {}),
  });
  await Promise.race([Promise.all([server.close(), (tasks as { close?: () => Promise<void> }).close?.()]), sleep(2000)]).catch(() => undefined);
  process.exit(0); // task workers (and a capped request still running) must not keep the case alive
}

// ---------------------------------------------------------------------------------------------
// The parent: every case in its own process.

function runChild(name: string): Promise<CaseResult> {
  return new Promise((resolve) => {
    const began = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, '--case', name, '--cap-s', String(capMs / 1000)], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true, // its own process group, so pdftoppm & co. go with it
    });
    let out = '';
    let err = '';
    let hostileStart: number | undefined;
    let killed = false;
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (hostileStart === undefined && out.includes('{"event":"hostile-start"}')) hostileStart = Date.now();
    });
    child.stderr.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-4000);
    });
    const timer = setTimeout(() => {
      killed = true;
      killGroup(child.pid);
    }, CHILD_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      killGroup(child.pid); // whatever it started and left behind
      const line = out.split('\n').reverse().find((l) => l.startsWith(RESULT_PREFIX));
      if (line) return resolve(JSON.parse(line) as CaseResult);
      // The error itself, not its stack (nor the minified source line some modules print with it).
      const lastError = err.split('\n').map((l) => l.trim())
        .filter((l) => l && !l.startsWith('at ') && !l.startsWith('Node.js ') && !/^\^+$/.test(l) && l.length < 400)
        .slice(-2).join(' | ');
      resolve({
        case: name,
        status: killed ? 'timeout' : 'crashed',
        hostileMs: hostileStart ? Date.now() - hostileStart : null,
        loopP99Ms: null, loopMaxMs: null, goodRequests: 0, goodP99Ms: null,
        crashed: !killed, timedOut: killed,
        note: `${killed ? `killed after ${CHILD_TIMEOUT_MS / 1000} s` : `exit ${code ?? signal}`} after ${Math.round((Date.now() - began) / 1000)} s` +
          `${hostileStart ? '' : ' (before the hostile request)'}${lastError ? `: ${lastError}` : ''}`,
      });
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

const cell = (v: unknown) => (v == null ? '–' : String(v).replace(/\|/g, '\\|').replace(/\s+/g, ' '));

function table(results: CaseResult[]): string {
  const head = '| case | status | hostile ms | loop p99 ms | loop max ms | good requests | good p99 ms | good max ms | crashed | note |';
  const rows = results.map((r) => `| ${[r.case, r.status, r.hostileMs, r.loopP99Ms, r.loopMaxMs, r.goodRequests, r.goodP99Ms, r.goodMaxMs, r.crashed ? 'yes' : 'no', r.note?.slice(0, 120)].map(cell).join(' | ')} |`);
  return [head, `|${'---|'.repeat(10)}`, ...rows].join('\n');
}

function git(...argv: string[]): string | undefined {
  try {
    return execFileSync('git', argv, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

async function runAll(): Promise<void> {
  const out = option('out') ?? join(ROOT, 'bench/results/hostile.json');
  const only = option('cases')?.split(',');
  const chosen = only ? CASES.filter((c) => only.includes(c.name)) : CASES;
  const results: CaseResult[] = [];
  const began = Date.now();
  for (const c of chosen) {
    process.stderr.write(`${c.name}… `);
    const result = await runChild(c.name);
    process.stderr.write(`${result.status} (${Math.round(result.hostileMs ?? 0)} ms hostile)\n`);
    results.push(result);
  }
  const report = {
    when: new Date().toISOString(),
    commit: git('rev-parse', 'HEAD'),
    dirty: (git('status', '--porcelain', '--untracked-files=no') ?? '') !== '',
    node: process.version,
    cpus: availableParallelism(),
    memoryGb: Math.round(totalmem() / 2 ** 30),
    capSeconds: capMs / 1000,
    goodEveryMs: GOOD_EVERY_MS,
    totalSeconds: Math.round((Date.now() - began) / 1000),
    results,
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${table(results)}\n\nWrote ${out} (${report.totalSeconds} s, commit ${report.commit?.slice(0, 7)}${report.dirty ? ' + changes' : ''})`);
}

const caseName = option('case');
if (caseName) {
  await runCase(caseName).catch((err: Error) => {
    emit({
      case: caseName, status: 'error', hostileMs: null, loopP99Ms: null, loopMaxMs: null, goodRequests: 0, goodP99Ms: null, crashed: false,
      note: `case failed before measuring: ${String(err.stack ?? err).slice(0, 400)}`,
    });
    process.exit(1);
  });
} else {
  await runAll();
}
