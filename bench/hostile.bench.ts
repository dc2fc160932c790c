// How hostile inputs hurt the server's event loop: for each case, a server with the real tasks
// (bench/hostile/serve-tasks.ts) runs in a child process of its own (bench/lib/child-server.ts), so a
// crash or a hang is recorded, not fatal; this process sends it one hostile request while a
// well-behaved caller asks for a plain chat every 50 ms, and reads the server's own event loop delay
// through the child server's stats. This process's loop is never the one blocked, so it keeps the
// cap itself and stops a server still stuck at it.
//
// Run:  node --import tsx bench/hostile.bench.ts [--out bench/results/hostile.json] [--cases a,b] [--cap-s 240]
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type ChildServer, startChildServer } from './lib/child-server.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = join(ROOT, 'bench/hostile/serve-tasks.ts');
/** A case (start, warm-up, the hostile request) still running after this is stopped and recorded as timed out. */
const CASE_TIMEOUT_MS = 5 * 60_000;
const GOOD_EVERY_MS = 50;
const BASELINE_MS = 2000;
/** How long a server's stats are awaited after the hostile request: a loop still blocked cannot answer. */
const STATS_WAIT_MS = 5000;

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
// One case: its own server, warmed, then the hostile request beside the good caller.

/** The key every request carries: the server is src/testing/test-server.ts's app. */
const KEY = 'sk-test-key';

async function post(baseUrl: string, body: unknown, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST', signal,
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** What a case measured once its server is up (a crash or the case's time limit is the caller's). */
async function measure(spec: HostileCase, server: ChildServer, progress: { hostileStartedAt?: number }): Promise<CaseResult> {
  const baseUrl = `http://127.0.0.1:${server.port}/v1`;
  const { renderTextImage, textPdf, scannedPdf, dataUrl } = await fixtures();
  const warmed = async (label: string, body: unknown) => {
    const { status, text } = await post(baseUrl, body);
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
  await server.stats(); // the loop's delay is counted from here: the warm-ups are not measured

  const start = performance.now();
  const goodCaller = new AbortController();
  let outcome: { status: number | string; ms: number; note?: string } | undefined;
  let stop = false;
  if (hostileBody !== undefined) {
    progress.hostileStartedAt = Date.now();
    const hostileDone = post(baseUrl, hostileBody).then(
      ({ status, text }) => ({ status, ms: performance.now() - start, ...(status !== 200 ? { note: text.slice(0, 200) } : {}) }),
      (err: Error) => ({ status: 'error', ms: performance.now() - start, note: String(err.cause ?? err.message).slice(0, 200) }),
    );
    // Unref'd: once the case is over, a cap that did not fire must not keep this process alive.
    const capped = sleep(capMs, undefined, { ref: false }).then(() => ({ status: 'timeout', ms: performance.now() - start, note: `no answer within ${capMs / 1000} s` }));
    void Promise.race([hostileDone, capped]).then((o) => {
      outcome = o;
      stop = true;
      if (o.status === 'timeout') goodCaller.abort(); // a good request waiting on a loop still blocked at the cap
    });
  } else {
    void sleep(BASELINE_MS).then(() => (stop = true));
  }

  // A good request is due 50 ms after the previous one was due (or at its answer, if that came
  // later); its latency counts from when it was due, so a block that falls between two requests
  // is counted too, not omitted.
  const latencies: number[] = [];
  let failures = 0;
  let due = performance.now();
  let lastAnswerAt = Date.now();
  while (!stop) {
    try {
      if ((await post(baseUrl, GOOD, goodCaller.signal)).status !== 200) failures++;
    } catch {
      if (stop) break; // cut at the cap: not a failure of the server's, and no latency to count
      failures++;
    }
    const answered = performance.now();
    lastAnswerAt = Date.now();
    latencies.push(answered - due);
    due = Math.max(answered, due + GOOD_EVERY_MS);
    if (due > answered && !stop) await sleep(due - answered);
  }
  await sleep(20); // one more loop turn in the server, so a block that ended with the hostile answer is sampled
  const loop = await Promise.race([server.stats(), sleep(STATS_WAIT_MS).then(() => undefined)]);
  const timedOut = outcome?.status === 'timeout';
  const blocked = loop ? undefined : `event loop still blocked ${STATS_WAIT_MS / 1000} s after the cap: loop max is a lower bound`;
  const note = [outcome?.note, blocked].filter(Boolean).join('; ');
  return {
    case: spec.name,
    status: outcome?.status ?? '-',
    hostileMs: round(outcome?.ms ?? null),
    loopP99Ms: round(loop?.loopP99Ms),
    // A loop still blocked cannot say how long: it has not answered since the last good request, a lower bound.
    loopMaxMs: round(loop ? loop.loopMaxMs : Date.now() - lastAnswerAt),
    goodRequests: latencies.length,
    goodP99Ms: round(p99(latencies)),
    goodMaxMs: round(latencies.length ? Math.max(...latencies) : null),
    crashed: false,
    ...(timedOut ? { timedOut: true } : {}),
    ...(failures ? { goodFailures: failures } : {}),
    ...(note ? { note } : {}),
  };
}

/** Runs one case against a server of its own, stopped whatever happens; a crash or a hang is a result. */
async function runCase(spec: HostileCase): Promise<CaseResult> {
  const began = Date.now();
  const progress: { hostileStartedAt?: number } = {};
  const failed = (status: string, why: string): CaseResult => ({
    case: spec.name, status, hostileMs: progress.hostileStartedAt ? Date.now() - progress.hostileStartedAt : null,
    loopP99Ms: null, loopMaxMs: null, goodRequests: 0, goodP99Ms: null, crashed: status === 'crashed', timedOut: status === 'timeout',
    note: `${why} after ${Math.round((Date.now() - began) / 1000)} s${progress.hostileStartedAt ? '' : ' (before the hostile request)'}`,
  });
  let server: ChildServer;
  try {
    server = await startChildServer(SERVER, {});
  } catch (err) {
    return failed('crashed', `${(err as Error).message}`);
  }
  try {
    return await Promise.race([
      measure(spec, server, progress).catch((err: Error) => failed('error', `case failed: ${String(err.message).slice(0, 400)}`)),
      server.exited.then((how) => failed('crashed', `${how}${lastError(server.stderrTail())}`)),
      sleep(CASE_TIMEOUT_MS, undefined, { ref: false }).then(() => failed('timeout', `stopped after ${CASE_TIMEOUT_MS / 1000} s`)),
    ]);
  } finally {
    await server.stop();
  }
}

/** The error itself from a stderr tail, not its stack (nor the minified source line some modules print with it). */
function lastError(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim())
    .filter((l) => l && !l.startsWith('at ') && !l.startsWith('Node.js ') && !/^\^+$/.test(l) && l.length < 400);
  return lines.length ? `: ${lines.slice(-2).join(' | ')}` : '';
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
    const result = await runCase(c);
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

await runAll();
