import { foldEvents } from '../../engines/fold-events.ts';
import { compileSchema } from '../../engines/json-schema.ts';
import type { Engine, GenerationEvent, OutputFormat } from '../../engines/engine.ts';
import { invalidRequest } from '../../errors/service-error.ts';
import { type FetchLimits, safeFetch } from '../../inputs/safe-fetch.ts';
import type { Task, TaskInput } from '../task.ts';
import type { PageReader } from './page-reader.ts';

export const URL_IN_TEXT = /https?:\/\/[^\s<>"')\]]+/i;
/** Tokens the scraper's extraction may generate (its `max_tokens`), reserved up front by the quota. */
export const SCRAPER_EXTRACTION_MAX_TOKENS = 1000;
/** How much page text the language model sees when it extracts. */
const EXTRACTION_CONTEXT_CHARS = 6_000;

/**
 * Fetches the page named in the user message (or reads an attached HTML file) and returns what
 * it holds. With a `json_schema` response format, or instructions beside the URL, the language
 * model also extracts structured data from the page text.
 */
export function createScraperTask(deps: { engine: Engine; fetchLimits: FetchLimits; pages: PageReader }): Task {
  return {
    name: 'scraper',
    async run(input) {
      const page = await loadPage(input, deps.fetchLimits, deps.pages);
      const instructions = input.text.replace(URL_IN_TEXT, '').trim();
      const wantsSchema = input.output.kind === 'json' && Object.keys(input.output.schema.schema).length > 0;
      const extracted = wantsSchema || instructions
        ? await extract(deps.engine, page.text, instructions, input.output, input.signal, input.onTokens)
        : undefined;
      return { name: 'scraper', result: { ...page, ...(extracted !== undefined ? { extracted } : {}) } };
    },
  };
}

async function loadPage(input: TaskInput, limits: FetchLimits, pages: PageReader) {
  const html = input.attachments.find((a) => a.mime === 'text/html');
  if (html) return pages.read(html.bytes, html.filename ?? 'attachment.html');
  const url = URL_IN_TEXT.exec(input.text)?.[0];
  if (!url) throw invalidRequest('The scraper task needs a URL in the user message, or an attached HTML file.', 'invalid_request', 'messages');
  input.onCommitted?.({ pages_fetched: 1 }); // the fetch is under way once sent
  const fetched = await safeFetch(url, limits, 'messages', input.signal);
  return pages.read(fetched.bytes, fetched.finalUrl);
}

/** Passes the events on, keeping the text said so far. */
async function* heard(events: AsyncIterable<GenerationEvent>, said: { text: string }): AsyncGenerator<GenerationEvent> {
  for await (const event of events) {
    if (event.type === 'content' || event.type === 'reasoning') said.text += event.text;
    yield event;
  }
}

async function extract(engine: Engine, pageText: string, instructions: string, output: OutputFormat, signal: AbortSignal,
  onTokens?: TaskInput['onTokens']): Promise<unknown> {
  const format: OutputFormat = output.kind === 'json'
    ? output
    : { kind: 'json', name: 'extracted', schema: compileSchema({ type: 'object' }, 'response_format') };
  const messages = [
    { role: 'system' as const, content: 'Extract the requested data from the web page below. Answer with JSON only.' },
    { role: 'user' as const, content: `${instructions || 'Extract the main facts.'}\n\nWeb page:\n${pageText.slice(0, EXTRACTION_CONTEXT_CHARS)}` },
  ];
  const said = { text: '' };
  let folded;
  try {
    folded = await foldEvents(heard(engine.generate({
      messages,
      // Bounded, as every generation a caller pays for: the reservation counts on this many.
      maxTokens: SCRAPER_EXTRACTION_MAX_TOKENS,
      temperature: 0, topP: 1, stop: [], output: format, tools: [], toolChoice: 'none', parallelToolCalls: false, stream: false, signal,
    }), said));
  } catch (err) {
    // Cut before its usage came (its caller left, the engine failed): what it generated is paid,
    // counted as the quota stage counts an engine's text that came without usage.
    if (said.text) {
      const count = (text: string) => engine.countTokens?.(text) ?? Math.ceil(Buffer.byteLength(text) / 3);
      onTokens?.({ promptTokens: count(messages.map((m) => m.content).join('\n')), completionTokens: count(said.text) });
    }
    throw err;
  }
  onTokens?.(folded.usage);
  try {
    return JSON.parse(folded.content);
  } catch {
    return folded.content; // cut at the token limit: the text as far as it got
  }
}
