// The balance journal of the embedded store: reservations and settlements are appended to a
// journal beside the keys file (group commit), not a rewrite of the file each. What must hold:
// nothing acknowledged is lost and nothing is applied twice, across a kill -9, across the CLI
// writing the same file, across a torn last line and across a fold interrupted half way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { journalPathOf } from './balance-journal.ts';
import { createEmbeddedStore } from './embedded-store.ts';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import type { KeyRecord, Store } from './store.ts';

/** Only to catch a hang; nothing here measures time. */
const HANG = { timeout: 300_000 };
const BASE = mkdtempSync(join(tmpdir(), 'journal-test-'));
after(() => rmSync(BASE, { recursive: true, force: true }));
const newFile = () => join(mkdtempSync(join(BASE, 'keys-')), 'keys.json');
const quiet = { warn: () => {} };
const open = (file: string) => createEmbeddedStore({ file, cacheMaxEntries: 0, log: quiet });

const newRecord = (): KeyRecord => {
  const nonce = randomBytes(6).toString('hex');
  return { id: `key_${nonce}`, name: nonce, hash: createHash('sha256').update(nonce).digest('hex'),
    createdAt: '2024-01-01T00:00:00.000Z', revokedAt: null, rpm: null, tpm: null };
};

async function meteredKey(file: string, credits: number): Promise<string> {
  const store = open(file);
  const record = newRecord();
  await store.createKey(record);
  await store.setCredits(record.id, credits);
  return record.id;
}

/** What a request does to a metered key: reserve its most, then give back what it did not use. */
async function request(store: Store, id: string, most: number, used: number): Promise<void> {
  const reservation = await store.reserveCredits(id, most);
  assert.deepEqual(reservation, { ok: true });
  if (most - used !== 0) await store.addCredits(id, most - used);
}

describe('the balance journal of the embedded store', () => {
  it('takes reservations and settlements without rewriting the keys file, exactly', HANG, async () => {
    const file = newFile();
    const id = await meteredKey(file, 1_000);
    const before = statSync(file);
    const store = open(file);
    await Promise.all(Array.from({ length: 40 }, (_, i) => request(store, id, 10, i % 10)));
    const after = statSync(file);
    assert.equal(after.ino, before.ino, 'the keys file was replaced');
    assert.equal(after.mtimeMs, before.mtimeMs, 'the keys file was written');
    const charged = Array.from({ length: 40 }, (_, i) => i % 10).reduce((a, b) => a + b, 0);
    assert.equal(await store.credits(id), 1_000 - charged);
    assert.equal(await open(file).credits(id), 1_000 - charged, 'a fresh store reads the file and its journal');
  });

  it('keeps exact balances when the same process reads while its own batch is being written', HANG, async () => {
    const file = newFile();
    const id = await meteredKey(file, 100_000);
    const store = open(file);
    let done = false;
    let charged = 0;
    let inFlight = 0;
    const seen: string[] = [];
    // Reads between every turn of the event loop, so some land while a batch's line is written;
    // each must lie between what the finished requests charged and that minus the most the
    // requests in flight can hold.
    const reader = (async () => {
      while (!done) {
        const balance = (await store.credits(id)) as number;
        const [low, high] = [100_000 - charged - 10 * inFlight, 100_000 - charged];
        if (balance < low || balance > high) seen.push(`${balance} outside [${low}, ${high}]`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 40; i++) {
        inFlight += 1;
        await request(store, id, 10, (w + i) % 10);
        charged += (w + i) % 10;
        inFlight -= 1;
      }
    }));
    done = true;
    await reader;
    assert.deepEqual(seen, [], 'every read was a balance that was or could have been');
    assert.equal(await open(file).credits(id), 100_000 - charged, 'on disk');
    assert.equal(await store.credits(id), 100_000 - charged, 'in the memory of the process that wrote it');
  });

  it('loses no acknowledged credit and applies none twice across a kill -9 under load', HANG, async () => {
    const file = newFile();
    const start = 1_000_000;
    // A key per worker, each worker one operation at a time: after the crash each balance is
    // exact up to the one operation its worker had in flight, so nothing lost can hide.
    const ids: string[] = [];
    for (let w = 0; w < 16; w++) ids.push(await meteredKey(file, start));
    const storeUrl = new URL('./embedded-store.ts', import.meta.url).href;
    // Each operation is announced before it is sent and acknowledged after it resolved, both with
    // a synchronous write to the pipe, so a kill loses no line the store's work came before.
    const childCode = `
      import { writeSync } from 'node:fs';
      const { createEmbeddedStore } = await import(${JSON.stringify(storeUrl)});
      // Folds every ~40 lines, so the kill may land in a fold too.
      const store = createEmbeddedStore({ file: process.argv[1], cacheMaxEntries: 0, log: { warn: () => {} }, journalFoldBytes: 2048 });
      const ids = process.argv[2].split(',');
      let next = 0;
      const op = async (w, delta, run) => {
        const n = next++;
        writeSync(1, 'begin ' + n + ' ' + w + ' ' + delta + '\\n');
        await run();
        writeSync(1, 'ack ' + n + '\\n');
      };
      await Promise.all(ids.map(async (id, w) => {
        for (let i = 0; ; i++) {
          const most = 1 + ((w + i) % 9);
          const used = (w * i) % (most + 1);
          await op(w, -most, async () => { const r = await store.reserveCredits(id, most); if (!r.ok) throw new Error('refused'); });
          if (most - used > 0) await op(w, most - used, () => store.addCredits(id, most - used));
        }
      }));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', childCode, file, ids.join(',')],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    const begun = new Map<number, { w: number; delta: number }>();
    const acked = new Set<number>();
    let buffered = '';
    const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const [kind, n, w, delta] = line.split(' ');
        if (kind === 'begin') begun.set(Number(n), { w: Number(w), delta: Number(delta) });
        else if (kind === 'ack') acked.add(Number(n));
        // Mid-load: well past the first group commits and folds, while 16 operations are in flight.
        if (acked.size === 600 && child.exitCode === null) child.kill('SIGKILL');
      }
    });
    await exited;
    assert.ok(acked.size >= 600, `the child stopped early after ${acked.size} operations`);
    const after = open(file);
    for (const [w, id] of ids.entries()) {
      const mine = [...begun].filter(([, op]) => op.w === w);
      const settled = mine.filter(([n]) => acked.has(n)).reduce((sum, [, op]) => sum + op.delta, 0);
      const inFlight = mine.filter(([n]) => !acked.has(n)).map(([, op]) => op.delta);
      assert.ok(inFlight.length <= 1);
      const balance = await after.credits(id);
      const possible = [start + settled, ...inFlight.map((d) => start + settled + d)];
      assert.ok(possible.includes(balance as number),
        `key ${w}: balance ${balance} after the crash; its acknowledged operations leave ${start + settled}`
        + (inFlight.length ? `, or ${start + settled + inFlight[0]!} with the one in flight` : ''));
    }
  });

  it('loses neither the CLI\'s top-ups nor the server\'s settlements made at the same time', HANG, async () => {
    const file = newFile();
    // The server settles for as long as the CLI takes to start, which a busy machine stretches:
    // in CI 8 workers spent 10,000 credits before the CLI was done, and a refused reservation
    // failed the test. A balance that no run can spend keeps it about lost updates alone.
    const start = 1_000_000_000;
    const id = await meteredKey(file, start);
    const cli = fileURLToPath(new URL('../keys/cli.ts', import.meta.url));
    const topUps = [7, 11, 13];
    let cliDone = 0;
    const runs = topUps.map((n) => new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', cli, 'credit', id, String(n)],
        { env: { PATH: process.env.PATH ?? '', KEYS_FILE: file }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += c));
      child.on('close', (code) => {
        cliDone += 1;
        if (code === 0) resolve();
        else reject(new Error(`keys credit exited ${code}: ${stderr}`));
      });
    }));
    const server = open(file);
    let charged = 0;
    // The server keeps settling requests until every CLI process is done, so the two overlap
    // whatever the CLI's start-up time.
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; cliDone < topUps.length || i < 5; i++) {
        const used = (w + i) % 6;
        await request(server, id, 5, used);
        charged += used;
      }
    }));
    await Promise.all(runs);
    const expected = start + topUps.reduce((a, b) => a + b, 0) - charged;
    assert.equal(await server.credits(id), expected);
    assert.equal(await open(file).credits(id), expected);
  });

  it('ignores a torn last line (a write cut short) and appends after the last whole one', HANG, async () => {
    const file = newFile();
    const id = await meteredKey(file, 100);
    const store = open(file);
    assert.deepEqual(await store.reserveCredits(id, 10), { ok: true });
    appendFileSync(journalPathOf(file), `{"id":"${id}","d":-5`);
    const restarted = open(file);
    assert.equal(await restarted.credits(id), 90);
    assert.deepEqual(await restarted.reserveCredits(id, 3), { ok: true });
    assert.equal(await restarted.credits(id), 87);
    assert.equal(await open(file).credits(id), 87, 'the next record was not glued to the torn bytes');
  });

  it('refuses to change a balance over a damaged journal, says so once, and keeps what it read', HANG, async () => {
    const file = newFile();
    const id = await meteredKey(file, 100);
    const warnings: string[] = [];
    const store = createEmbeddedStore({ file, cacheMaxEntries: 0, log: { warn: (m: string) => void warnings.push(m) } });
    assert.deepEqual(await store.reserveCredits(id, 10), { ok: true });
    appendFileSync(journalPathOf(file), 'not a record\n');
    assert.equal(await store.credits(id), 90);
    await assert.rejects(store.reserveCredits(id, 1),
      (err: unknown) => err instanceof StoreUnavailableError && err.code === 'keys_journal_invalid');
    await assert.rejects(store.addCredits(id, 1), StoreUnavailableError);
    assert.equal(await store.credits(id), 90);
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /balance journal .* is damaged/);
  });

  it('applies a journal once when a fold was cut between the keys file and the journal', HANG, async () => {
    const file = newFile();
    const id = await meteredKey(file, 100);
    const store = open(file);
    await request(store, id, 10, 4);
    const journal = journalPathOf(file);
    const kept = `${journal}.kept`;
    copyFileSync(journal, kept);
    // A change of the keys file folds the journal into it and removes the journal.
    await store.setKeyLimits(id, { rpm: 5 });
    assert.equal(existsSync(journal), false, 'the journal was folded');
    assert.equal(JSON.parse(readFileSync(file, 'utf8'))[0].credits, 96);
    // A crash after the keys file was replaced but before the journal was removed.
    copyFileSync(kept, journal);
    assert.equal(await open(file).credits(id), 96);
    const after = open(file);
    await request(after, id, 10, 1);
    assert.equal(await open(file).credits(id), 95);
  });
});
