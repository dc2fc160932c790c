// Replaces a file so that a reader, or a crash, sees either the old content or the new, never
// half of it: write a temp file beside it, flush it to disk, rename it over the original.
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

export async function writeFileAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const handle = await open(tmp, 'wx', mode);
    try {
      await handle.writeFile(text);
      // Without this, a power loss after the rename can leave an empty file where the keys were.
      // The directory is not synced: losing the rename loses only the last write, not the file.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
