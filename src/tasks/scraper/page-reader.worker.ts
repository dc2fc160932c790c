// The scraper's worker process (see PageReader).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { type PageLimits, readHtmlPage } from './html-page.ts';

serveJobs({ readHtmlPage: async (html: Uint8Array, url: string, limits: PageLimits) => readHtmlPage(html, url, limits) });
