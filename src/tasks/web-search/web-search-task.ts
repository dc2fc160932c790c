import { invalidRequest, serviceUnavailable } from '../../errors/service-error.ts';
import type { Task } from '../task.ts';
import type { SearchProvider } from './search-provider.ts';

/** Searches the web through the configured provider; without one, says how to configure it. */
export function createWebSearchTask(provider: SearchProvider | undefined): Task {
  return {
    name: 'web_search',
    async run(input) {
      if (!provider) {
        throw serviceUnavailable(
          'Web search has no provider configured. Set SEARXNG_URL to a SearXNG instance with the JSON format enabled, or BRAVE_SEARCH_API_KEY for the Brave Search API.',
          'search_not_configured', 60);
      }
      const query = input.text.trim();
      if (!query) throw invalidRequest('The web_search task needs a query in the user message.', 'invalid_request', 'messages');
      input.onCommitted?.({ searches: 1 }); // the provider bills the call once it is sent
      return { name: 'web_search', result: { query, provider: provider.name, results: await provider.search(query, input.signal) } };
    },
  };
}
