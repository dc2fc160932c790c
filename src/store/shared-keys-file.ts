// The keys file as several processes share it (the CLI and the server): reads come from memory,
// reloaded when the file changes; every change is a read-modify-write under the file lock with an
// atomic replace, so no process overwrites another's update with a stale copy.
import { closeSync, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { StoreUnavailableError } from '../errors/store-errors.ts';
import { withFileLock, type FileLockOptions } from './file-lock.ts';
import { parseEntries, serializeEntries, type KeyEntry } from './keys-file.ts';
import { Mutex } from './mutex.ts';
import type { Logger } from '../logging.ts';

/**
 * A version read less than this after it was written may share its mtime with a later version
 * (timestamps are coarse: a kernel tick, a second on some file systems), so it is read again
 * next time rather than trusted by its signature (git's "racy" rule).
 */
const RACY_MS = 1_000;

export interface Change<T> {
  /** False: nothing changed, nothing is written. */
  write: boolean;
  result: T;
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;
const signatureOf = (s: Stats) => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;

export class SharedKeysFile {
  private entries: KeyEntry[] = [];
  /** Of the version in `entries`; 'absent' when there was no file. */
  private signature: string | undefined;
  private racy = false;
  /** Why the file's current version was not taken; undefined when it was. */
  private problem: string | undefined;
  private reportedSignature: string | undefined;
  private readonly mutex = new Mutex();

  constructor(
    readonly file: string,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly lockOptions: FileLockOptions = {},
  ) {}

  /** The entries as of now; while the file cannot be read as keys, the last ones that could. */
  current(): readonly KeyEntry[] {
    this.reloadIfChanged();
    return this.entries;
  }

  /**
   * Runs `change` on the entries as they are in the file now, with every other writer (in this
   * process or another) held off until it is written. Throws, writing nothing, while the file
   * cannot be read as keys: writing the last good keys over it would drop whatever it now holds.
   */
  update<T>(change: (entries: KeyEntry[]) => Change<T>): Promise<T> {
    const locked = async () => {
      await this.createFolder();
      return withFileLock(`${this.file}.lock`, () => this.updateLocked(change), { ...this.lockOptions, log: this.log });
    };
    return this.mutex.run(locked).catch((err: unknown) => {
      // A file system that refuses (permissions, a full disk) is an outage to the caller, as a
      // Redis that is down is: the same error type, whichever backend.
      if (!(err instanceof StoreUnavailableError) && /^E[A-Z]+$/.test(errno(err) ?? '')) {
        throw new StoreUnavailableError(`The keys file ${this.file} cannot be updated: ${(err as Error).message}`,
          'store_unavailable', { cause: err });
      }
      throw err;
    });
  }

  /**
   * The file's folder, made on the first write (a fresh clone has no data/) and private: the
   * file holds key hashes and balances. A folder that cannot be made is the operator's to fix.
   */
  private async createFolder(): Promise<void> {
    const folder = dirname(this.file);
    try {
      await mkdir(folder, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StoreUnavailableError(`cannot create the folder ${folder} for the keys file ${this.file}: ${(err as Error).message}`,
        'keys_folder_unavailable', { cause: err });
    }
  }

  private async updateLocked<T>(change: (entries: KeyEntry[]) => Change<T>): Promise<T> {
    const read = await this.readLocked();
    const { write, result } = change(read.entries);
    if (!write) {
      this.adopt(read.entries, read.signature, read.mtimeMs);
      return result;
    }
    await writeFileAtomic(this.file, serializeEntries(read.entries));
    const written = await stat(this.file);
    this.adopt(read.entries, signatureOf(written), written.mtimeMs);
    return result;
  }

  /** The file as it is now, read whatever its signature (under the lock, exactness beats saving a read). */
  private async readLocked(): Promise<{ entries: KeyEntry[]; signature: string; mtimeMs?: number }> {
    let handle;
    try {
      handle = await open(this.file, 'r');
    } catch (err) {
      if (errno(err) === 'ENOENT') return { entries: [], signature: 'absent' };
      throw err;
    }
    try {
      const stats = await handle.stat();
      const text = await handle.readFile('utf8');
      try {
        return { entries: parseEntries(text), signature: signatureOf(stats), mtimeMs: stats.mtimeMs };
      } catch (err) {
        this.reject(err, signatureOf(stats), stats.mtimeMs);
        throw new StoreUnavailableError(this.problem ?? 'the keys file is invalid', 'keys_file_invalid');
      }
    } finally {
      await handle.close();
    }
  }

  private reloadIfChanged(): void {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch (err) {
      if (errno(err) === 'ENOENT') {
        // No file: no keys, as the key store has always had it (deleting the file revokes all).
        this.adopt([], 'absent');
      } else {
        // Unreadable (permissions): like unparsable, the keys read before stay in force.
        this.reject(err, `unreadable:${errno(err)}`);
      }
      return;
    }
    try {
      // Stat and read through one descriptor, so the signature belongs to the text read.
      const stats = fstatSync(fd);
      const signature = signatureOf(stats);
      if (signature === this.signature && !this.racy) return;
      const text = readFileSync(fd, 'utf8');
      try {
        this.adopt(parseEntries(text), signature, stats.mtimeMs);
      } catch (err) {
        this.reject(err, signature, stats.mtimeMs);
      }
    } finally {
      closeSync(fd);
    }
  }

  private adopt(entries: KeyEntry[], signature: string, mtimeMs?: number): void {
    this.entries = entries;
    this.signature = signature;
    this.racy = mtimeMs !== undefined && Date.now() - mtimeMs < RACY_MS;
    this.problem = undefined;
    this.reportedSignature = undefined;
  }

  /** Keeps the entries read before; says so once per bad version, not once per request. */
  private reject(err: unknown, signature: string, mtimeMs?: number): void {
    this.signature = signature;
    this.racy = mtimeMs !== undefined && Date.now() - mtimeMs < RACY_MS;
    this.problem = `The keys file ${this.file} cannot be read as keys (${(err as Error).message}); `
      + `the ${this.entries.length} keys read before stay in force until it is fixed.`;
    if (signature !== this.reportedSignature) {
      this.reportedSignature = signature;
      this.log.warn(this.problem);
    }
  }
}
