/**
 * Whether a process of that id runs on this machine (EPERM: it does, as another user). Not a pid
 * (0, negative, fractional) is no process: `kill` would read it as a process group or all of them.
 * Read by the lock file's and the temp folders' stale-owner checks.
 */
export function processRuns(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
