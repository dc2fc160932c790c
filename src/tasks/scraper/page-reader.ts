import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { Page, PageLimits } from './html-page.ts';

export type { Page, PageLimits };
export type ScraperLimits = WorkerLimits & PageLimits;

type Jobs = { readHtmlPage: (html: Uint8Array, url: string, limits: PageLimits) => Promise<Page> };

/**
 * HTML pages, parsed in a worker process under the task deadline and heap bound: a page of
 * megabytes takes the parser seconds and hundreds of MB, which would stall every other request
 * on the event loop, and a hostile one can only take its own process down.
 */
export class PageReader {
  private readonly worker: IsolatedWorker<Jobs>;

  constructor(private readonly limits: ScraperLimits) {
    this.worker = new IsolatedWorker(new URL('./page-reader.worker.ts', import.meta.url), 'web page reader', limits);
  }

  /** `url` resolves the page's relative links (an attached file's name when it has none). */
  read(html: Buffer, url: string): Promise<Page> {
    const { maxHtmlBytes, maxLinks, maxTables, maxTableCells, maxMetadata, maxTextChars } = this.limits;
    // Only the bytes that will be parsed cross to the worker.
    return this.worker.run('readHtmlPage', html.subarray(0, maxHtmlBytes), url,
      { maxHtmlBytes, maxLinks, maxTables, maxTableCells, maxMetadata, maxTextChars });
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
