/** One HTTP exchange as the report shows it: what was sent, what came back (excerpts). */
export interface Exchange {
  request: string;
  response: string;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  json: unknown;
}

const excerpt = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text);

/**
 * Sends requests to the implementation under test and keeps every exchange as evidence. Keys are
 * shown masked. `signal` ends a check that overruns its timeout.
 */
export class Probe {
  readonly exchanges: Exchange[] = [];

  constructor(readonly baseUrl: string, private readonly apiKey: string, private readonly signal: AbortSignal) {}

  /** POST {base_url}/chat/completions; `key: null` sends no Authorization header. */
  async complete(body: unknown, options: { key?: string | null; headers?: Record<string, string>; raw?: string } = {}): Promise<Answer> {
    const key = options.key === undefined ? this.apiKey : options.key;
    const headers: Record<string, string> = { 'Content-Type': 'application/json', ...options.headers };
    if (key !== null) headers.Authorization = `Bearer ${key}`;
    const payload = options.raw ?? JSON.stringify(body);
    const res = await fetch(`${this.baseUrl}/chat/completions`, { method: 'POST', headers, body: payload, signal: this.signal });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const shownHeaders = Object.entries(headers).map(([k, v]) => `${k}: ${k === 'Authorization' ? 'Bearer ***' : v}`).join('\n');
    this.exchanges.push({
      request: `POST ${this.baseUrl}/chat/completions\n${shownHeaders}\n\n${excerpt(payload, 600)}`,
      response: `${res.status} ${res.headers.get('content-type') ?? ''}\n\n${excerpt(text, 900)}`,
    });
    return { status: res.status, headers: res.headers, text, json };
  }
}

/** The `data:` payloads of an event stream, in order ([DONE] included as the string). */
export function streamEvents(text: string): string[] {
  return text.split(/\r?\n\r?\n/).map((e) => e.trim()).filter(Boolean)
    .map((event) => event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n'));
}
