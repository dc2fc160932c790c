import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Drain, untilShutdown } from './drain.ts';

/** Events that never come: a stream waiting on its engine. */
function never<T>(): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<T>>(() => {}), return: async () => ({ done: true, value: undefined }) }) };
}

test('the grace period ends the requests still in flight, and only those, each once', async () => {
  const drain = new Drain();
  const finished = drain.track();
  const waiting = [drain.track(), drain.track()];
  finished.done();
  finished.done(); // a second call changes nothing
  assert.equal(drain.size, 2);
  const reads = waiting.map((flight) => untilShutdown(never<string>(), flight.signal).next());
  const ended = drain.drain(0);
  for (const read of reads) await assert.rejects(read, (err: { code?: string }) => err.code === 'shutting_down');
  waiting.forEach((flight) => flight.done());
  assert.equal(await ended, 2);
  assert.equal(drain.size, 0);
});

test('many requests in flight listen on the one shutdown signal without a leak warning', async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    const drain = new Drain();
    const flights = Array.from({ length: 50 }, () => drain.track());
    const streams = flights.map((flight) => untilShutdown(never<string>(), flight.signal));
    const reads = streams.map((stream) => stream.next().catch(() => 'ended'));
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    assert.deepEqual(warnings, []);
    await Promise.all(streams.map((stream) => stream.return?.()));
    flights.forEach((flight) => flight.done());
    assert.equal(drain.size, 0);
    void reads;
  } finally {
    process.off('warning', onWarning);
  }
});
