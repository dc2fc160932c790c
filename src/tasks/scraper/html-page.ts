import * as cheerio from 'cheerio';
import type { ScraperResult } from '../../contract/wire-types.ts';

export type { ScraperResult };

const MAX_TEXT = 100_000;

/** An absolute link where the page has a URL to resolve against (an attached file has none). */
function resolveHref(href: string, base: string): string {
  for (const attempt of [() => new URL(href, base), () => new URL(href)]) {
    try {
      return attempt().toString();
    } catch {
      // not resolvable this way
    }
  }
  return href;
}

/** Title, readable text, links, tables and `<meta>` of an HTML page. */
export function readHtmlPage(html: string, url: string): Omit<ScraperResult, 'extracted'> {
  const $ = cheerio.load(html);
  $('script, style, noscript, template, svg').remove();
  const clean = (s: string) => s.replace(/\s+/g, ' ').trim();

  const metadata: Record<string, string> = {};
  $('meta').each((_, el) => {
    const key = $(el).attr('name') ?? $(el).attr('property');
    const content = $(el).attr('content');
    if (key && content !== undefined) metadata[key] = content;
  });

  const links: { text: string; url: string }[] = [];
  $('a[href]').each((_, el) => {
    const href = $(el).attr('href')!;
    links.push({ text: clean($(el).text()), url: resolveHref(href, url) });
  });

  const tables = $('table').toArray().map((table) => {
    const rows = $(table).find('tr').toArray().map((tr) => $(tr).find('th, td').toArray().map((cell) => clean($(cell).text())));
    const headerRow = $(table).find('tr').first().find('th').length > 0;
    return { headers: headerRow ? (rows[0] ?? []) : [], rows: headerRow ? rows.slice(1) : rows };
  });

  // Block elements end a line, so the text keeps the page's paragraphs; cells keep apart.
  $('th, td').after(' ');
  $('p, div, li, h1, h2, h3, h4, h5, h6, tr, br, section, article, header, footer').after('\n');
  const text = $('body').text().split('\n').map(clean).filter(Boolean).join('\n').slice(0, MAX_TEXT);

  return { url, title: clean($('title').first().text()), text, links, tables, metadata };
}
