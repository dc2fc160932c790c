import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tapEvents } from './tap-events.ts';

async function* source(closed: string[], items = [1, 2, 3]) {
  try {
    for (const n of items) yield n;
  } finally {
    closed.push('source');
  }
}

describe('tapEvents', () => {
  it('passes each event through the tap, which may replace it, in order', async () => {
    const seen: number[] = [];
    const out: number[] = [];
    for await (const n of tapEvents(source([]), { event: (n) => (seen.push(n), n === 2 ? 20 : undefined) })) out.push(n);
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual(out, [1, 20, 3]);
  });

  it('passes the source\'s failure through `failed`, which may put another in its place', async () => {
    const failing = (async function* () {
      yield 1;
      throw new Error('upstream');
    })();
    const tapped = tapEvents(failing, { failed: (err) => new Error(`seen: ${(err as Error).message}`) });
    assert.deepEqual(await tapped.next(), { done: false, value: 1 });
    await assert.rejects(tapped.next(), /seen: upstream/);
  });

  it('closes its source when closed, and when the tap throws', async () => {
    const closed: string[] = [];
    const tapped = tapEvents(source(closed), {});
    await tapped.next();
    await tapped.return!();
    assert.deepEqual(closed, ['source']);

    const throwing = tapEvents(source(closed), { event: () => { throw new Error('tap'); } });
    await assert.rejects(throwing.next(), /tap/);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(closed, ['source', 'source']);
  });
});
