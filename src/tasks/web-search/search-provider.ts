import type { WebSearchResult } from '../../contract/wire-types.ts';
import { serviceUnavailable } from '../../errors/service-error.ts';

export type SearchHit = WebSearchResult['results'][number];

export interface SearchProvider {
  readonly name: string;
  search(query: string, signal: AbortSignal): Promise<SearchHit[]>;
}

const MAX_RESULTS = 10;

/** A SearXNG instance's JSON API (`format=json` must be enabled in its settings). */
export function createSearxngProvider(baseUrl: string, timeoutMs: number): SearchProvider {
  return {
    name: 'searxng',
    async search(query, signal) {
      const url = new URL('search', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
      url.search = new URLSearchParams({ q: query, format: 'json' }).toString();
      const body = await getJson(url, {}, timeoutMs, signal, 'SearXNG') as { results?: { title?: string; url?: string; content?: string }[] };
      return (body.results ?? []).slice(0, MAX_RESULTS).map((r) => ({ title: r.title ?? '', url: r.url ?? '', snippet: r.content ?? '' }));
    },
  };
}

/** The Brave Search API (a hosted provider; needs a subscription token). */
export function createBraveProvider(apiKey: string, timeoutMs: number, baseUrl = 'https://api.search.brave.com/res/v1'): SearchProvider {
  return {
    name: 'brave',
    async search(query, signal) {
      const url = new URL(`${baseUrl}/web/search`);
      url.search = new URLSearchParams({ q: query, count: String(MAX_RESULTS) }).toString();
      const body = await getJson(url, { 'X-Subscription-Token': apiKey, Accept: 'application/json' }, timeoutMs, signal, 'Brave Search') as
        { web?: { results?: { title?: string; url?: string; description?: string }[] } };
      return (body.web?.results ?? []).slice(0, MAX_RESULTS).map((r) => ({ title: r.title ?? '', url: r.url ?? '', snippet: r.description ?? '' }));
    },
  };
}

/** The provider is operator configuration, not caller input, so it is fetched directly. */
async function getJson(url: URL, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal, what: string): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
  } catch (err) {
    throw serviceUnavailable(`The search provider (${what}) is unreachable: ${(err as Error).message}.`, 'search_unavailable');
  }
  if (!response.ok) throw serviceUnavailable(`The search provider (${what}) answered HTTP ${response.status}.`, 'search_unavailable');
  return response.json();
}
