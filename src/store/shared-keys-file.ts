// The keys file as several processes share it (the CLI and the server): reads come from memory,
// reloaded when the file or its balance journal changes. A change of a key (create, revoke,
// limits, a balance set) is a read-modify-write of the keys file under the file lock with an
// atomic replace, so no process overwrites another's update with a stale copy. A change of a
// balance by an amount (a reservation, a settlement, a top-up) is a line appended to the journal
// beside it (balance-journal.ts says why), under the same lock, with group commit: the changes
// that queue while one batch is written go together in the next, one lock and one fdatasync for
// all, and none is answered before its line is on disk.
import { closeSync, fstatSync, openSync, readFileSync, readSync, type Stats } from 'node:fs';
import { mkdir, open, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-write.ts';
import { baseOf, headerLine, JOURNAL_FOLD_BYTES, JournalFormatError, journalPathOf, parseJournal, recordLine } from './balance-journal.ts';
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

/** A change of one balance by an amount, decided on the entry as it is when its batch is written. */
export interface Adjustment<T> {
  /** Added to the balance (0: nothing is written); applied only to a key with a balance. */
  delta: number;
  result: T;
}

interface Pending {
  id: string;
  decide: (entry: Readonly<KeyEntry> | undefined) => Adjustment<unknown>;
  resolve: (result: unknown) => void;
  reject: (err: unknown) => void;
}

/** How far the journal was read: its inode, the bytes taken (whole lines), its size then. */
interface JournalState {
  id: string;
  offset: number;
  size: number;
  /** Its base is not the keys version in force: its lines were counted already, or never apply. */
  stale: boolean;
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;
const signatureOf = (s: Stats) => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
const fileId = (s: Stats) => `${s.dev}:${s.ino}`;

export class SharedKeysFile {
  readonly journalFile: string;
  /** The keys file's entries with the journal's changes applied: what every read answers. */
  private entries: KeyEntry[] = [];
  /** The keys file's own entries, text, identity and base, of the version in `entries`. */
  private keysEntries: KeyEntry[] = [];
  private keysText: string | null = null;
  private keysId: string | null = null;
  private base: string | null = null;
  /** Of the version in `entries`; 'absent' when there was no file. */
  private signature: string | undefined;
  private racy = false;
  private journal: JournalState | null = null;
  /** Why the file's current version was not taken; undefined when it was. */
  private problem: string | undefined;
  private reportedSignature: string | undefined;
  private reportedJournal: string | undefined;
  private readonly mutex = new Mutex();
  private pending: Pending[] = [];
  private flushQueued = false;
  /** True while this process holds the file lock: its memory is then the newest state. */
  private holding = false;

  constructor(
    readonly file: string,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly lockOptions: FileLockOptions = {},
    /** Past this size the journal is folded into the keys file (tests fold often). */
    private readonly foldBytes = JOURNAL_FOLD_BYTES,
  ) {
    this.journalFile = journalPathOf(file);
  }

  /** The entries as of now; while the file cannot be read as keys, the last ones that could. */
  current(): readonly KeyEntry[] {
    // While this process holds the lock nobody else writes, and its own batch may be half on
    // disk: a read of the files then would count that batch twice, or not at all.
    if (this.holding) return this.entries;
    try {
      this.refresh(false);
    } catch (err) {
      // Outside the lock a read that fails keeps what was read before; the next write says why.
      if (!(err instanceof StoreUnavailableError)) this.reportJournal(err);
    }
    return this.entries;
  }

  /**
   * Runs `change` on the entries as they are in the file now, with every other writer (in this
   * process or another) held off until it is written. Throws, writing nothing, while the file
   * cannot be read as keys: writing the last good keys over it would drop whatever it now holds.
   */
  update<T>(change: (entries: KeyEntry[]) => Change<T>): Promise<T> {
    return this.locked(async () => {
      this.refresh(true);
      const draft = structuredClone(this.entries);
      const { write, result } = change(draft);
      if (write) await this.writeKeysLocked(draft);
      return result;
    });
  }

  /**
   * Changes the balance of key `id` by what `decide` answers, seeing the balance with every change
   * before it (in any process) applied; resolves once the change is on disk. Changes made while
   * another batch is being written share the next write.
   */
  adjust<T>(id: string, decide: (entry: Readonly<KeyEntry> | undefined) => Adjustment<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ id, decide, resolve: resolve as (r: unknown) => void, reject });
      if (this.flushQueued) return;
      this.flushQueued = true;
      let batch: Pending[] | undefined;
      this.locked(async () => {
        // Taken once the lock is held: everything that queued while waiting for it goes too.
        batch = this.takePending();
        await this.flushLocked(batch);
      }).catch((err: unknown) => {
        for (const p of batch ?? this.takePending()) p.reject(err);
      });
    });
  }

  private takePending(): Pending[] {
    const batch = this.pending;
    this.pending = [];
    this.flushQueued = false;
    return batch;
  }

  /** Runs `section` under this process's mutex and the file lock; file system refusals become outages. */
  private locked<T>(section: () => Promise<T>): Promise<T> {
    const run = async () => {
      await this.createFolder();
      return withFileLock(`${this.file}.lock`, async () => {
        this.holding = true;
        try {
          return await section();
        } finally {
          this.holding = false;
        }
      }, { ...this.lockOptions, log: this.log });
    };
    return this.mutex.run(run).catch((err: unknown) => {
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

  private async flushLocked(batch: Pending[]): Promise<void> {
    this.refresh(true);
    let lines = '';
    const answers: (() => void)[] = [];
    for (const p of batch) {
      const entry = this.entries.find((e) => e.id === p.id);
      try {
        const { delta, result } = p.decide(entry);
        if (delta !== 0 && entry && entry.credits !== null) {
          entry.credits += delta;
          lines += recordLine({ id: p.id, delta });
        }
        answers.push(() => p.resolve(result));
      } catch (err) {
        answers.push(() => p.reject(err));
      }
    }
    if (lines !== '') {
      try {
        await this.appendLocked(Buffer.from(lines));
      } catch (err) {
        // The balances in memory went ahead of the disk: read everything again next time.
        this.forget();
        throw err;
      }
    }
    for (const answer of answers) answer();
    if (this.journal && this.journal.offset > this.foldBytes) {
      // The changes are on disk and answered; a fold that fails now is tried again next batch.
      await this.writeKeysLocked(structuredClone(this.entries)).catch((err: unknown) => {
        this.forget();
        this.log.warn(`The balance journal ${this.journalFile} could not be folded into the keys file: ${(err as Error).message}`);
      });
    }
  }

  /** Appends whole lines and waits for them to be on disk. Under the lock, after refresh(true). */
  private async appendLocked(bytes: Buffer): Promise<void> {
    const journal = this.journal;
    if (!journal || journal.stale) {
      // A journal for the keys version in force, replaced whole, so no reader sees it without its base.
      const text = Buffer.concat([Buffer.from(headerLine(this.base!)), bytes]);
      await writeFileAtomic(this.journalFile, text.toString('utf8'));
      await syncFolder(dirname(this.journalFile));
      const written = await stat(this.journalFile);
      this.journal = { id: fileId(written), offset: text.length, size: text.length, stale: false };
      return;
    }
    const handle = await open(this.journalFile, 'r+');
    try {
      // A torn last line (a write a crash cut short) is cut off, so the next line is not glued to it.
      if (journal.size > journal.offset) await handle.truncate(journal.offset);
      await handle.write(bytes, 0, bytes.length, journal.offset);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    journal.offset += bytes.length;
    journal.size = journal.offset;
  }

  /** Replaces the keys file with `entries`, which count the journal's changes, and removes the journal. */
  private async writeKeysLocked(entries: KeyEntry[]): Promise<void> {
    const text = serializeEntries(entries);
    await writeFileAtomic(this.file, text);
    // The replace must be on disk before the journal it counts is gone, or a power loss could keep
    // the old keys file without its journal. A crash between the two leaves a journal whose base
    // no longer matches the keys file: it is ignored, never counted twice.
    await syncFolder(dirname(this.file));
    await rm(this.journalFile, { force: true });
    const written = await stat(this.file);
    this.keysEntries = structuredClone(entries);
    this.entries = entries;
    this.keysText = text;
    this.keysId = fileId(written);
    this.base = baseOf(written, text);
    this.journal = null;
    this.adopt(signatureOf(written), written.mtimeMs);
  }

  /** Forgets what was read, so the next refresh reads the keys file and the journal whole. */
  private forget(): void {
    this.keysText = null;
    this.keysId = null;
    this.signature = undefined;
    this.journal = null;
  }

  /**
   * Brings `entries` up to the files. `exact` (under the lock): the keys file is read whatever its
   * signature, and a file that cannot be read as keys, or a damaged journal, throws. Otherwise the
   * signature saves the read, and a bad version keeps the entries read before.
   */
  private refresh(exact: boolean): void {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch (err) {
      if (errno(err) === 'ENOENT') {
        // No file: no keys, as the key store has always had it (deleting the file revokes all).
        // A journal left without its keys file has no base to apply to.
        this.keysEntries = [];
        this.entries = [];
        this.keysText = null;
        this.keysId = null;
        this.base = null;
        this.journal = null;
        this.adopt('absent');
        return;
      }
      if (exact) throw err;
      // Unreadable (permissions): like unparsable, the keys read before stay in force.
      this.reject(err, `unreadable:${errno(err)}`);
      return;
    }
    try {
      // Stat and read through one descriptor, so the signature belongs to the text read.
      const stats = fstatSync(fd);
      const signature = signatureOf(stats);
      if (exact || signature !== this.signature || this.racy) {
        const text = readFileSync(fd, 'utf8');
        if (text !== this.keysText || fileId(stats) !== this.keysId) {
          if (!this.loadKeys(text, stats, exact)) return;
        } else {
          this.adopt(signature, stats.mtimeMs);
        }
      }
    } finally {
      closeSync(fd);
    }
    this.readJournal(exact);
  }

  /** Takes a new version of the keys file; false (or a throw when exact) when it is not keys. */
  private loadKeys(text: string, stats: Stats, exact: boolean): boolean {
    let parsed: KeyEntry[];
    try {
      parsed = parseEntries(text);
    } catch (err) {
      this.reject(err, signatureOf(stats), stats.mtimeMs);
      if (exact) throw new StoreUnavailableError(this.problem ?? 'the keys file is invalid', 'keys_file_invalid');
      return false;
    }
    this.keysEntries = parsed;
    this.entries = structuredClone(parsed);
    this.keysText = text;
    this.keysId = fileId(stats);
    this.base = baseOf(stats, text);
    this.journal = null;
    this.adopt(signatureOf(stats), stats.mtimeMs);
    return true;
  }

  /** Applies the journal's whole lines not applied yet: its tail, or all of it when it is new. */
  private readJournal(exact: boolean): void {
    let fd: number;
    try {
      fd = openSync(this.journalFile, 'r');
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
      // Gone (folded by another process, whose new keys file the next read takes): no changes.
      if (this.journal) this.entries = structuredClone(this.keysEntries);
      this.journal = null;
      return;
    }
    try {
      const stats = fstatSync(fd);
      const id = fileId(stats);
      const known = this.journal?.id === id && stats.size >= this.journal.offset ? this.journal : null;
      const from = known?.offset ?? 0;
      if (known) known.size = stats.size;
      if (stats.size === from) {
        if (!known) this.startJournal(id, 0, stats.size, false);
        return;
      }
      const bytes = Buffer.alloc(stats.size - from);
      readSync(fd, bytes, 0, bytes.length, from);
      let parsed;
      try {
        parsed = parseJournal(bytes, from);
      } catch (err) {
        if (!(err instanceof JournalFormatError)) throw err;
        // Only said under the lock: outside it, another process's fold may have put a new journal
        // on a reused inode between the two reads, which the next read corrects by itself.
        if (!exact) return;
        const problem = `The balance journal ${this.journalFile} is damaged (${err.message}); balances `
          + 'cannot change until it is fixed (the keys file holds the balances before it).';
        if (`${id}:${from}` !== this.reportedJournal) {
          this.reportedJournal = `${id}:${from}`;
          this.log.warn(problem);
        }
        throw new StoreUnavailableError(problem, 'keys_journal_invalid');
      }
      if (known) {
        if (!known.stale) this.apply(parsed.records);
        known.offset += parsed.consumed;
        return;
      }
      // A journal not read before: the keys file's entries and all of it. Only a whole header
      // says which keys version it is for; without one it holds nothing yet.
      const stale = parsed.base !== undefined && parsed.base !== this.base;
      this.startJournal(id, parsed.consumed, stats.size, stale);
      if (!stale) this.apply(parsed.records);
    } finally {
      closeSync(fd);
    }
  }

  private startJournal(id: string, offset: number, size: number, stale: boolean): void {
    this.entries = structuredClone(this.keysEntries);
    // A journal whose header is not whole yet (offset 0) is replaced on the next append.
    this.journal = { id, offset, size, stale: stale || offset === 0 };
  }

  private apply(records: { id: string; delta: number }[]): void {
    for (const { id, delta } of records) {
      const entry = this.entries.find((e) => e.id === id);
      // A key removed by hand, or made unlimited since (which folded the journal), takes nothing.
      if (entry && entry.credits !== null) entry.credits += delta;
    }
  }

  private reportJournal(err: unknown): void {
    const message = `The balance journal ${this.journalFile} cannot be read (${(err as Error).message}).`;
    if (message !== this.reportedJournal) {
      this.reportedJournal = message;
      this.log.warn(message);
    }
  }

  private adopt(signature: string, mtimeMs?: number): void {
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

/** Puts a folder's entries (a rename, a new file) on disk. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
