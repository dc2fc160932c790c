// A worker module for isolated-worker.test.ts: jobs that behave well, fail, overrun and blow up.
import { invalidRequest } from '../errors/service-error.ts';
import { serveJobs } from './serve-jobs.ts';

const hoard: unknown[] = [];

serveJobs({
  double: async (n: number) => n * 2,
  refuse: async () => {
    throw invalidRequest('that file is not readable', 'invalid_content', 'messages[0]');
  },
  spin: async (ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end); // busy, as a decoder on a hostile file is
    return 'spun';
  },
  hoard: async () => {
    for (;;) hoard.push(Array.from({ length: 100_000 }, (_, i) => ({ i })));
  },
  crash: async () => process.exit(3),
});
