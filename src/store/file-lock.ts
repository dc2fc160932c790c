// An exclusive lock between processes on one machine: a lock file created with O_EXCL.
//
// Why not proper-lockfile: the project may add one dependency for the store (ioredis), and
// proper-lockfile is only here transitively. Its mkdir lock and periodic mtime refresh also buy
// little for critical sections that are one read and one write of a small file. O_EXCL is atomic
// on local file systems, and the lock file records who holds it, so a lock left by a crashed
// process is recognised (dead pid) and broken instead of blocking every later write.
import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import type { Logger } from '../logging.ts';
import { processRuns } from '../process/process-runs.ts';

export interface FileLockOptions {
  /**
   * A lock older than this is taken as abandoned even when its pid is alive (the pid may have been
   * reused, as it often is in a container restarted after a crash). Critical sections last
   * milliseconds; only a frozen holder outlives this.
   */
  staleMs?: number;
  /** How long to wait for the lock before giving up. Longer than staleMs, so a waiter outlasts any abandoned lock. */
  timeoutMs?: number;
  log?: Pick<Logger, 'warn'>;
}

interface Holder {
  pid: number;
  host: string;
  token: string;
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

export async function withFileLock<T>(lockPath: string, section: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const { staleMs = 10_000, timeoutMs = 15_000, log = console } = options;
  const token = randomBytes(12).toString('hex');
  await acquire(lockPath, token, staleMs, timeoutMs, log);
  try {
    return await section();
  } finally {
    await release(lockPath, token, log);
  }
}

async function acquire(lockPath: string, token: string, staleMs: number, timeoutMs: number, log: Pick<Logger, 'warn'>) {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    if (await tryCreate(lockPath, token)) return;
    if (await breakIfStale(lockPath, staleMs, log)) continue;
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError(`${lockPath} stayed locked for ${timeoutMs} ms by another process`, 'store_locked');
    }
    // Jittered and growing a little, so waiters in several processes do not retry in lockstep.
    await sleep(Math.min(2 + attempt, 25) * (0.5 + Math.random()));
  }
}

async function tryCreate(lockPath: string, token: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(lockPath, 'wx', 0o600);
  } catch (err) {
    if (errno(err) === 'EEXIST') return false;
    throw err;
  }
  try {
    const holder: Holder = { pid: process.pid, host: hostname(), token };
    await handle.writeFile(JSON.stringify({ ...holder, at: new Date().toISOString() }));
    await handle.close();
    return true;
  } catch (err) {
    // A lock we could not label (disk full) would look held by nobody and block until stale.
    await handle.close().catch(() => undefined);
    await unlink(lockPath).catch(() => undefined);
    throw err;
  }
}

function parseHolder(text: string): Holder | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<Holder>;
    // A pid that is not one (0, negative) was not written by a holder: the lock is judged by age alone.
    if (Number.isSafeInteger(parsed.pid) && parsed.pid! > 0 && typeof parsed.host === 'string' && typeof parsed.token === 'string') {
      return parsed as Holder;
    }
  } catch {
    // Empty or half written: its holder is between creating and labelling it; judged by age alone.
  }
  return undefined;
}

/** True when the lock is gone (now or already), so the caller should try to take it at once. */
async function breakIfStale(lockPath: string, staleMs: number, log: Pick<Logger, 'warn'>): Promise<boolean> {
  let seen;
  try {
    // One descriptor for the stat and the read, so both describe the same lock file.
    const handle = await open(lockPath, 'r');
    try {
      seen = { stat: await handle.stat(), holder: parseHolder(await handle.readFile('utf8')) };
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (errno(err) === 'ENOENT') return true;
    throw err;
  }
  const { holder } = seen;
  const deadHolder = holder !== undefined && holder.host === hostname() && !processRuns(holder.pid);
  if (!deadHolder && Date.now() - seen.stat.mtimeMs < staleMs) return false;

  // Two waiters may judge the same lock stale; rename moves it for exactly one of them. The loser
  // may instead move a fresh lock taken in between, recognised by its inode and put back.
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await rename(lockPath, aside);
  } catch (err) {
    if (errno(err) === 'ENOENT') return true;
    throw err;
  }
  const moved = await stat(aside);
  if (moved.ino === seen.stat.ino && moved.dev === seen.stat.dev) {
    await unlink(aside);
    const who = holder ? `pid ${holder.pid} on ${holder.host}` : 'an unknown process';
    log.warn(`Removed the abandoned lock ${lockPath} of ${who}.`);
    return true;
  }
  try {
    await link(aside, lockPath);
  } catch (err) {
    if (errno(err) !== 'EEXIST') throw err;
    // Only when two waiters break one abandoned lock at the same instant and a third takes it.
    log.warn(`The lock ${lockPath} was broken while held; one write may have been lost.`);
  } finally {
    await unlink(aside);
  }
  return false;
}

async function release(lockPath: string, token: string, log: Pick<Logger, 'warn'>): Promise<void> {
  let holder;
  try {
    holder = parseHolder(await readFile(lockPath, 'utf8'));
  } catch (err) {
    if (errno(err) !== 'ENOENT') throw err;
  }
  // Never remove a lock another process has taken after judging ours abandoned.
  if (holder?.token !== token) {
    log.warn(`The lock ${lockPath} was taken from this process while held (it outlived its stale age).`);
    return;
  }
  await unlink(lockPath);
}
