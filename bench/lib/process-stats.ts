// Preloaded (`--import`) into a server under benchmark that was forked with an IPC channel: it
// answers "stats" with the process's CPU time so far and its heap after a full collection, so the
// load generator in the parent can charge CPU to requests and watch the heap without touching the
// server's code.
import v8 from 'node:v8';
import vm from 'node:vm';

// Only in the server itself: processes it forks inherit this --import (node-llama-cpp's binary
// check is one, and needs its own IPC channel untouched), but not the variable.
if (process.env.BENCH_PROCESS_STATS === '1' && process.send) {
  delete process.env.BENCH_PROCESS_STATS;
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  process.on('message', (message) => {
    if (message !== 'stats') return;
    gc();
    const cpu = process.cpuUsage();
    const memory = process.memoryUsage();
    process.send!({ cpuMicros: cpu.user + cpu.system, heapUsed: memory.heapUsed, rss: memory.rss });
  });
  process.channel?.unref(); // the channel must not keep a server alive that was told to stop
}
