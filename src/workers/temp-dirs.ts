// The service's private temp directories (a caller's video for ffmpeg, audio for the speech
// worker) are removed when their request ends; a run that crashes, or is killed, leaves them, with
// the caller's files in them. Each is named after the process that made it, so a later start can
// remove those of a process that is gone without touching those of an instance still running.
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processRuns } from '../process/process-runs.ts';

/** Every prefix the service makes temp directories under; a new one belongs here. */
export const TEMP_PREFIXES = ['service-video-', 'stt-'] as const;
export type TempPrefix = (typeof TEMP_PREFIXES)[number];

/**
 * Past this age a directory is stale whoever made it: a pid can be reused, and no request lives
 * this long (every task and fetch has a deadline of an hour at most).
 */
export const STALE_AFTER_MS = 24 * 3600 * 1000;

/** A private directory (0700) named `<prefix><pid>-<random>` in the system's temp directory. */
export function makeTempDir(prefix: TempPrefix): Promise<string> {
  return mkdtemp(join(tmpdir(), `${prefix}${process.pid}-`));
}

/**
 * Removes the directories of `TEMP_PREFIXES` in `base` whose process is gone, or that are older
 * than `STALE_AFTER_MS` (so too those named before the pid was in the name); returns their names.
 * One that cannot be read or removed is left, and said in `failed`.
 */
export async function removeStaleTempDirs(base = tmpdir(), now = Date.now()): Promise<{ removed: string[]; failed: string[] }> {
  const removed: string[] = [];
  const failed: string[] = [];
  for (const name of await readdir(base).catch(() => [])) {
    const prefix = TEMP_PREFIXES.find((p) => name.startsWith(p));
    if (!prefix) continue;
    const path = join(base, name);
    try {
      const info = await lstat(path);
      if (!info.isDirectory()) continue; // mkdtemp makes directories; a link of that name is not ours to follow
      const owner = /^(\d+)-[^-]+$/.exec(name.slice(prefix.length))?.[1];
      const ownerGone = owner !== undefined && !processRuns(Number(owner));
      if (!ownerGone && now - info.mtimeMs <= STALE_AFTER_MS) continue;
      await rm(path, { recursive: true, force: true });
      removed.push(name);
    } catch {
      failed.push(name);
    }
  }
  return { removed, failed };
}

