import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs `source`, an ES module body that prints one JSON line, in a fresh Node with the project's
 * loader, and returns what it printed. For work that may block its own thread (a backtracking
 * pattern): no timer inside that thread can end it, so the hang detector lives here, in the
 * parent, which kills the child after `hangMs` (minutes: it detects a hang, it measures nothing).
 * Modules are imported by absolute URL: `moduleUrl('../engines/json-schema.ts', import.meta.url)`.
 */
export function runInChild(source: string, hangMs = 180_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source],
      { cwd: PROJECT_ROOT, timeout: hangMs, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err) {
          const why = err.killed ? `still running after ${hangMs} ms (hang detector), killed` : err.message;
          return reject(new Error(`child: ${why}\n${stderr.slice(-2000)}`));
        }
        try {
          resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? ''));
        } catch {
          reject(new Error(`child printed no JSON line: ${stdout.slice(-500)}\n${stderr.slice(-2000)}`));
        }
      });
  });
}

/** A module's absolute URL, for an import inside `runInChild`'s source. */
export const moduleUrl = (relative: string, from: string) => JSON.stringify(new URL(relative, from).href);

/**
 * Source that counts the child's event-loop turns (one per `setImmediate`) from the start; the
 * body reads `ticks()` and ends the count with `stopTicking()`.
 */
export const TICKER = `
let turns = 0, ticking = true;
const turn = () => { if (ticking) { turns++; setImmediate(turn); } };
setImmediate(turn);
const ticks = () => turns;
const stopTicking = () => { ticking = false; };
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
`;
