// The balance journal's format: an append-only file beside the keys file, one JSON line per change
// of a balance ({"id":"key_…","d":-12}), after a first line naming the version of the keys file
// the changes apply to ({"base":"dev:ino:sha256"}).
//
// Why a journal: a reservation and a settlement change one number, but rewriting and fsyncing
// the whole keys file for each held a metered key to a fraction of an unmetered one's throughput.
// An append of a few bytes is cheap, and one fdatasync serves every change waiting for it (group
// commit). The keys file stays the one place for everything else; the journal is folded into it
// by the next write of the file, or when it grows past JOURNAL_FOLD_BYTES.
//
// Why the base: a fold replaces the keys file and then removes the journal; a crash between the
// two leaves a journal already counted. The new keys file is a new inode with a new text, so the
// journal's base no longer matches and it is ignored. A keys file edited by hand likewise makes
// the balances written in it the truth, as an edit did before the journal.
import { createHash } from 'node:crypto';

export const journalPathOf = (file: string) => `${file}.journal`;

/** Past this size the journal is folded into the keys file (a rewrite per ~5,000 changes). */
export const JOURNAL_FOLD_BYTES = 256 * 1024;

export interface JournalRecord {
  id: string;
  delta: number;
}

export class JournalFormatError extends Error {}

/** Names one version of the keys file: its inode (each atomic replace is a new one) and its text. */
export function baseOf(stats: { dev: number; ino: number }, text: string): string {
  return `${stats.dev}:${stats.ino}:${createHash('sha256').update(text).digest('hex')}`;
}

export const headerLine = (base: string) => `${JSON.stringify({ base })}\n`;
export const recordLine = (r: JournalRecord) => `${JSON.stringify({ id: r.id, d: r.delta })}\n`;

const NEWLINE = 0x0a;

/**
 * The whole lines of `bytes` (read from `offset` in the journal; offset 0 starts with the header):
 * their records, the header's base when it was read, and how many bytes they took. A last line
 * without its newline is left unread: a write in progress in another process, or one a crash cut
 * short. A whole line that is not a record is an error: the journal was damaged, and guessing
 * would spend or return credits nobody acknowledged.
 */
export function parseJournal(bytes: Buffer, offset: number): { base?: string; records: JournalRecord[]; consumed: number } {
  const end = bytes.lastIndexOf(NEWLINE) + 1;
  const lines = bytes.subarray(0, end).toString('utf8').split('\n');
  lines.pop();
  let base: string | undefined;
  const records: JournalRecord[] = [];
  lines.forEach((line, i) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new JournalFormatError(`line ${i + 1} after byte ${offset} is not JSON`);
    }
    if (offset === 0 && i === 0) {
      if (typeof parsed?.base !== 'string') throw new JournalFormatError('the first line names no base');
      base = parsed.base;
      return;
    }
    if (typeof parsed?.id !== 'string' || !Number.isSafeInteger(parsed.d)) {
      throw new JournalFormatError(`line ${i + 1} after byte ${offset} is not {id, d (a whole number)}`);
    }
    records.push({ id: parsed.id, delta: parsed.d as number });
  });
  return { base, records, consumed: end };
}
