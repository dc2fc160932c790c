import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Apertium names languages with ISO 639-3 or 639-1 codes; the contract speaks 639-1. */
const TO_ISO1: Record<string, string> = {
  eng: 'en', spa: 'es', cat: 'ca', fra: 'fr', glg: 'gl', por: 'pt', epo: 'eo', eus: 'eu', hbs: 'sh', isl: 'is', mkd: 'mk', ita: 'it', oci: 'oc',
};
const iso1 = (code: string) => TO_ISO1[code] ?? code;

export interface Route {
  /** The apertium modes run in turn (two when pivoting through another language). */
  modes: string[];
}

/**
 * Rule-based translation by Debian's apertium, one process per call (`-u`: unknown words are left
 * as they are, unmarked). Pairs are the installed modes; a missing pair pivots through Spanish or
 * English where both legs exist.
 */
export class Apertium {
  private pairs: Promise<Map<string, string>> | undefined;

  /** `from-to` (ISO 639-1) → mode name, for plain modes (no variants such as `_valencia`). */
  async supportedPairs(): Promise<Map<string, string>> {
    this.pairs ??= run('apertium', ['-l'], { timeout: 10_000 }).then(({ stdout }) => {
      const pairs = new Map<string, string>();
      for (const mode of stdout.split(/\s+/)) {
        const match = /^([a-z]{2,3})-([a-z]{2,3})$/.exec(mode);
        if (match) pairs.set(`${iso1(match[1]!)}-${iso1(match[2]!)}`, mode);
      }
      return pairs;
    }, () => new Map<string, string>());
    return this.pairs;
  }

  async route(from: string, to: string): Promise<Route | undefined> {
    const pairs = await this.supportedPairs();
    const direct = pairs.get(`${from}-${to}`);
    if (direct) return { modes: [direct] };
    for (const pivot of ['es', 'en']) {
      const first = pairs.get(`${from}-${pivot}`);
      const second = pairs.get(`${pivot}-${to}`);
      if (first && second) return { modes: [first, second] };
    }
    return undefined;
  }

  async translate(text: string, route: Route): Promise<string> {
    let current = text;
    for (const mode of route.modes) {
      // apertium reads standard input only from a pipe, and Node hands a child a socket: `cat` bridges.
      const child = execFile('bash', ['-c', 'cat | apertium -u "$1"', 'apertium', mode], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 });
      const output = new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => (out += d));
        child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`apertium ${mode} exited with ${code}`))));
        child.on('error', reject);
      });
      child.stdin!.end(current);
      current = (await output).split('\n').map((l) => l.trim()).join('\n').trim();
    }
    return current;
  }
}
