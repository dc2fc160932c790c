import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Whether this process runs the build (`dist/`, plain node) rather than the TypeScript sources
 * (through tsx). `make run` serves the build: tsx names every function it creates at each creation,
 * which costs the request path a tenth to a quarter of its CPU (README, gateway).
 */
export const RUNS_BUILD = import.meta.url.endsWith('.js');

/** The repository's root, from this file in `src/` or in `dist/src/`. */
export const PROJECT_ROOT = fileURLToPath(new URL(RUNS_BUILD ? '../../' : '../', import.meta.url));

/** A file that ships beside the code and is never compiled (the contract, the Python workers, the model). */
export const projectFile = (path: string): string => join(PROJECT_ROOT, path);

/** A worker module given as its TypeScript URL, as this process runs it (the compiled sibling under `dist/`). */
export const runnableModule = (sourceUrl: URL): string =>
  fileURLToPath(sourceUrl).replace(/\.ts$/, RUNS_BUILD ? '.js' : '.ts');
