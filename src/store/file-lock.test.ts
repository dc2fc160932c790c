import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import { withFileLock } from './file-lock.ts';

/** Every lock of this run under one directory, removed at the end. */
const BASE = mkdtempSync(join(tmpdir(), 'lock-test-'));
after(() => rmSync(BASE, { recursive: true, force: true }));
const newLockPath = () => join(mkdtempSync(join(BASE, 'lock-')), 'keys.json.lock');
const quietLog = () => {
  const warnings: string[] = [];
  return { warnings, log: { warn: (...args: unknown[]) => void warnings.push(args.join(' ')) } };
};
/** A pid no process has: above the kernel's pid_max, which is at most 2^22. */
const DEAD_PID = 2 ** 22 + 1;

describe('withFileLock', () => {
  it('runs one section at a time and removes the lock after', async () => {
    const lockPath = newLockPath();
    let inside = 0;
    let most = 0;
    await Promise.all(Array.from({ length: 20 }, () => withFileLock(lockPath, async () => {
      inside += 1;
      most = Math.max(most, inside);
      await new Promise((resolve) => setTimeout(resolve, 1));
      inside -= 1;
    })));
    assert.equal(most, 1);
    assert.equal(existsSync(lockPath), false);
  });

  it('releases the lock when the section throws', async () => {
    const lockPath = newLockPath();
    await assert.rejects(withFileLock(lockPath, async () => { throw new Error('boom'); }), /boom/);
    assert.equal(existsSync(lockPath), false);
  });

  it('breaks a lock left by a process that is gone', async () => {
    const lockPath = newLockPath();
    writeFileSync(lockPath, JSON.stringify({ pid: DEAD_PID, host: hostname(), token: 'crashed' }));
    const { warnings, log } = quietLog();
    assert.equal(await withFileLock(lockPath, async () => 'ran', { log }), 'ran');
    assert.match(warnings.join('\n'), /abandoned lock/);
  });

  it('breaks a lock older than its stale age, whoever holds it', async () => {
    const lockPath = newLockPath();
    writeFileSync(lockPath, JSON.stringify({ pid: process.pid, host: hostname(), token: 'frozen' }));
    utimesSync(lockPath, 1, 1);
    assert.equal(await withFileLock(lockPath, async () => 'ran', { log: quietLog().log }), 'ran');
  });

  it('gives up on a live lock after its timeout, leaving it in place', async () => {
    const lockPath = newLockPath();
    const held = JSON.stringify({ pid: process.pid, host: hostname(), token: 'busy' });
    writeFileSync(lockPath, held);
    await assert.rejects(withFileLock(lockPath, async () => 'ran', { timeoutMs: 100 }),
      (err: unknown) => err instanceof StoreUnavailableError && err.code === 'store_locked');
    assert.equal(readFileSync(lockPath, 'utf8'), held);
  });

  it('does not remove a lock that was taken over while it was held', async () => {
    const lockPath = newLockPath();
    const { warnings, log } = quietLog();
    const other = JSON.stringify({ pid: process.pid, host: hostname(), token: 'other' });
    await withFileLock(lockPath, async () => writeFileSync(lockPath, other), { log });
    assert.equal(readFileSync(lockPath, 'utf8'), other);
    assert.match(warnings.join('\n'), /taken from this process/);
  });
});
