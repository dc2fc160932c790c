import * as cheerio from 'cheerio';
import type { ScraperResult } from '../../contract/wire-types.ts';

export type { ScraperResult };
export type Page = Omit<ScraperResult, 'extracted'>;

/** Bounds on what one page may make (README, "Scraper"); a page holds what it holds up to them. */
export interface PageLimits {
  /** `SCRAPER_MAX_HTML_BYTES`: only the page's first bytes are parsed (the parse tree costs ~50 times the HTML). */
  maxHtmlBytes: number;
  /** `SCRAPER_MAX_LINKS` */
  maxLinks: number;
  /** `SCRAPER_MAX_TABLES` */
  maxTables: number;
  /** `SCRAPER_MAX_TABLE_CELLS`: all tables together. */
  maxTableCells: number;
  /** `SCRAPER_MAX_METADATA`: `<meta>` entries. */
  maxMetadata: number;
  /** `SCRAPER_MAX_TEXT_CHARS`: the page's readable text. */
  maxTextChars: number;
}

/** One link's text, one cell, one `<meta>` content or the title: at most this many characters. */
export const MAX_FIELD_CHARS = 2_000;

/** The parse tree's nodes as cheerio (domhandler) makes them, as far as this file reads them. */
interface Node {
  type: string;
  name?: string;
  data?: string;
  attribs?: Record<string, string>;
  children?: Node[];
}

const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg']);
// Block elements end a line, so the text keeps the page's paragraphs; cells keep apart.
const BLOCKS = new Set(['p', 'div', 'li', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'tr', 'br', 'section', 'article', 'header', 'footer']);
const clean = (s: string) => s.replace(/\s+/g, ' ').trim();

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

/**
 * Every node under `root` in document order, without recursion: a page may nest elements a
 * hundred thousand deep, which a recursive walk (cheerio's `.text()`) would overflow the stack on.
 * `visit` returns false to skip a node's children, 'stop' to end the walk; `leave` is called
 * after a node's children.
 */
function walk(root: Node, visit: (node: Node) => boolean | 'stop', leave?: (node: Node) => void): void {
  const stack: { node: Node; leaving?: true }[] = [...(root.children ?? [])].reverse().map((node) => ({ node }));
  while (stack.length > 0) {
    const { node, leaving } = stack.pop()!;
    if (leaving) {
      leave!(node);
      continue;
    }
    const verdict = visit(node);
    if (verdict === 'stop') return;
    if (!verdict || !node.children) continue;
    if (leave) stack.push({ node, leaving: true });
    for (let i = node.children.length - 1; i >= 0; i--) stack.push({ node: node.children[i]! });
  }
}

const isTag = (node: Node) => node.type === 'tag' || node.type === 'script' || node.type === 'style';
const readable = (node: Node) => !(isTag(node) && SKIPPED.has(node.name!));

/**
 * The text under `node`, up to `max` characters (block elements on lines of their own when
 * `lines`), visiting at most `maxNodes` nodes: a cell over a thousand empty nested tables must not
 * cost a walk of them all, for each of ten thousand cells.
 */
function textOf(node: Node, max: number, { lines = false, maxNodes = max * 4 } = {}): string {
  const parts: string[] = [];
  let length = 0;
  let visited = 0;
  const isBlock = (child: Node) => lines && isTag(child) && BLOCKS.has(child.name!);
  walk(node, (child) => {
    if (!readable(child)) return false;
    if (child.type === 'text') {
      parts.push(child.data!);
      length += child.data!.length;
    } else if (isBlock(child)) {
      parts.push('\n');
    }
    // Whitespace collapses later; twice `max` leaves room for it.
    return length > max * 2 || ++visited > maxNodes ? 'stop' : true;
  }, (left) => {
    if (isBlock(left)) parts.push('\n');
    else if (isTag(left) && (left.name === 'td' || left.name === 'th')) parts.push(' ');
  });
  return lines
    ? parts.join('').split('\n').map(clean).filter(Boolean).join('\n').slice(0, max)
    : clean(parts.join('')).slice(0, max);
}

/** Rows of `table` (its `tr`s, nested ones too, as before), each of its `th`/`td` texts, within `cells` left. */
function readTable(table: Node, cells: { left: number }): ScraperResult['tables'][number] {
  const rows: string[][] = [];
  let headerRow = false;
  walk(table, (node) => {
    if (cells.left <= 0) return 'stop';
    if (!isTag(node) || node.name !== 'tr') return true;
    const row: string[] = [];
    walk(node, (cell) => {
      if (!isTag(cell) || (cell.name !== 'th' && cell.name !== 'td')) return true;
      if (cells.left-- <= 0) return 'stop';
      if (rows.length === 0 && cell.name === 'th') headerRow = true;
      row.push(textOf(cell, MAX_FIELD_CHARS));
      return false;
    });
    rows.push(row);
    return true; // a nested table's rows count too
  });
  return { headers: headerRow ? (rows[0] ?? []) : [], rows: headerRow ? rows.slice(1) : rows };
}

/**
 * Title, readable text, links, tables and `<meta>` of an HTML page, each within `limits`. Runs in
 * the scraper's worker process (page-reader.ts): parsing megabytes of HTML takes seconds.
 */
export function readHtmlPage(html: Uint8Array | string, url: string, limits: PageLimits): Page {
  // A Buffer sent to the worker arrives as a Uint8Array.
  const bytes = typeof html === 'string' ? Buffer.from(html) : Buffer.from(html.buffer, html.byteOffset, html.byteLength);
  const root = cheerio.load(bytes.subarray(0, limits.maxHtmlBytes).toString('utf8')).root()[0] as unknown as Node;

  const metadata: Record<string, string> = {};
  const links: ScraperResult['links'] = [];
  const tables: ScraperResult['tables'] = [];
  const cells = { left: limits.maxTableCells };
  let title: string | undefined;
  let body: Node | undefined;
  walk(root, (node) => {
    if (!isTag(node)) return true;
    const attribs = node.attribs ?? {};
    if (node.name === 'meta' && Object.keys(metadata).length < limits.maxMetadata) {
      const key = attribs.name ?? attribs.property;
      if (key && attribs.content !== undefined) metadata[key] = attribs.content.slice(0, MAX_FIELD_CHARS);
    } else if (node.name === 'title' && title === undefined) {
      title = textOf(node, MAX_FIELD_CHARS);
    } else if (node.name === 'body') {
      body ??= node;
    } else if (node.name === 'a' && attribs.href !== undefined && links.length < limits.maxLinks) {
      links.push({ text: textOf(node, MAX_FIELD_CHARS), url: resolveHref(attribs.href, url) });
    } else if (node.name === 'table' && tables.length < limits.maxTables) {
      tables.push(readTable(node, cells));
    }
    return readable(node);
  });

  const text = body ? textOf(body, limits.maxTextChars, { lines: true, maxNodes: Infinity }) : '';
  return { url, title: title ?? '', text, links, tables, metadata };
}
