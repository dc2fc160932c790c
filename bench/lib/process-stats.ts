// Preloaded (`--import`) into a server under benchmark that was forked with an IPC channel: it
// answers "stats" with the process's CPU time so far, its heap after a full collection and its
// event loop's delay since the previous "stats", so the load generator in the parent can charge CPU
// to requests, watch the heap and see a blocked loop without touching the server's code.
import { monitorEventLoopDelay } from 'node:perf_hooks';
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
  const ms = (ns: number) => (Number.isFinite(ns) && loop.count > 0 ? Math.round(ns / 1e4) / 100 : null);
  process.on('message', (message) => {
    if (message !== 'stats') return;
    const loopP99Ms = ms(loop.percentile(99));
    const loopMaxMs = ms(loop.max);
    loop.reset();
    gc();
    const cpu = process.cpuUsage();
    const memory = process.memoryUsage();
    process.send!({ cpuMicros: cpu.user + cpu.system, heapUsed: memory.heapUsed, rss: memory.rss, loopP99Ms, loopMaxMs });
  });
  process.channel?.unref(); // the channel must not keep a server alive that was told to stop
}
