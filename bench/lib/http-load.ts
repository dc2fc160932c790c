import http from 'node:http';

export interface LoadTarget {
  port: number;
  path: string;
  headers: Record<string, string>;
  /** The body of the i-th request (so that requests can differ, as real ones do). */
  body: (i: number) => string;
  /** Whether an answer counts as served: status and body are checked, not just counted. */
  ok: (status: number, body: string) => boolean;
}

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  /** Latencies in ms, sorted. */
  latencies: number[];
}

/** The q-quantile of sorted latencies, in ms with two decimals. */
export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return Number(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2));
}

/** Keep-alive connections to the target, one request at a time on each. */
function client(target: LoadTarget, connections: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let sent = 0;
  const send = () => new Promise<boolean>((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: target.port, path: target.path, method: 'POST', agent, headers: target.headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(target.ok(res.statusCode ?? 0, text)));
      res.on('error', () => resolve(false));
    });
    req.on('error', () => resolve(false));
    req.end(target.body(sent++));
  });
  return { send, close: () => agent.destroy() };
}

/**
 * Closed loop: `connections` clients each send their next request as soon as the last is
 * answered, for `seconds`. Measures what the target sustains at that concurrency.
 */
export async function closedLoop(target: LoadTarget, connections: number, seconds: number): Promise<LoadResult> {
  const { send, close } = client(target, connections);
  const latencies: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < end) {
      const at = performance.now();
      if (!(await send())) errors++;
      latencies.push(performance.now() - at);
    }
  }));
  close();
  const elapsed = (performance.now() - start) / 1000;
  return { requests: latencies.length, errors, seconds: elapsed, rps: Math.round(latencies.length / elapsed), latencies: latencies.sort((a, b) => a - b) };
}

/**
 * Open loop: requests start at a fixed `rate` per second whatever the answers do, on up to
 * `connections` connections, for `seconds`. Latency is counted from each request's scheduled
 * start, so a stall shows in it instead of slowing the load down.
 */
export async function paced(target: LoadTarget, connections: number, rate: number, seconds: number): Promise<LoadResult> {
  const { send, close } = client(target, connections);
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const total = Math.round(rate * seconds);
  const start = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < total) {
      const due = start + (next++ * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      if (!(await send())) errors++;
      latencies.push(performance.now() - due);
    }
  }));
  close();
  const elapsed = (performance.now() - start) / 1000;
  return { requests: latencies.length, errors, seconds: elapsed, rps: Math.round(latencies.length / elapsed), latencies: latencies.sort((a, b) => a - b) };
}
