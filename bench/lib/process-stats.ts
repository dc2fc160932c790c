// Preloaded (`--import`) into a server under benchmark that was forked with an IPC channel: it
// answers "stats" with the process's CPU time so far, its heap after a full collection, its
// event loop's delay since the previous "stats" and the time spent in GC so far, so the load generator in the parent can charge CPU
// to requests, watch the heap and see a blocked loop without touching the server's code.
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';

// Only in the server itself: processes it forks inherit this --import (node-llama-cpp's binary
// check is one, and needs its own IPC channel untouched), but not the variable.
if (process.env.BENCH_PROCESS_STATS === '1' && process.send) {
  delete process.env.BENCH_PROCESS_STATS;
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  // GC time as V8 reports it, without the collections forced below. Entries arrive after the fact,
  // so forced ones are told by when they started.
  const gcTime = { micros: 0, count: 0, minorMicros: 0, minorCount: 0 };
  const forced: Array<[number, number]> = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (forced.some(([from, to]) => entry.startTime >= from && entry.startTime <= to)) continue;
      const micros = entry.duration * 1000;
      gcTime.micros += micros;
      gcTime.count++;
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        gcTime.minorMicros += micros;
        gcTime.minorCount++;
      }
    }
  }).observe({ entryTypes: ['gc'] });
  const ms = (ns: number) => (Number.isFinite(ns) && loop.count > 0 ? Math.round(ns / 1e4) / 100 : null);
  process.on('message', (message) => {
    if (message !== 'stats') return;
    const loopP99Ms = ms(loop.percentile(99));
    const loopMaxMs = ms(loop.max);
    loop.reset();
    // CPU is read on both sides of the forced collection, so that a window between two readings
    // can leave it out: a full collection of the service's heap costs as much as a hundred requests.
    const cpuBefore = process.cpuUsage();
    const from = performance.now();
    gc();
    forced.push([from, performance.now()]);
    if (forced.length > 4) forced.shift();
    const cpu = process.cpuUsage();
    const memory = process.memoryUsage();
    process.send!({
      cpuMicros: cpu.user + cpu.system, cpuMicrosBeforeGc: cpuBefore.user + cpuBefore.system, heapUsed: memory.heapUsed, rss: memory.rss, loopP99Ms, loopMaxMs,
      maxRss: process.resourceUsage().maxRSS * 1024,
      gcMicros: Math.round(gcTime.micros), gcCount: gcTime.count, minorGcMicros: Math.round(gcTime.minorMicros), minorGcCount: gcTime.minorCount,
    });
  });
  process.channel?.unref(); // the channel must not keep a server alive that was told to stop
}
