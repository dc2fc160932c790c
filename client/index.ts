// The typed client of the contract: openapi-fetch over the generated `paths`, plus a reader that
// turns a streamed completion into typed chunks. Application teams import this module.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import createClient from 'openapi-fetch';
import type { components, paths } from '../generated/openapi.ts';

export type { components, paths };
export type ChatCompletionRequest = components['schemas']['ChatCompletionRequest'];
export type ChatCompletionResponse = components['schemas']['ChatCompletionResponse'];
export type ChatCompletionChunk = components['schemas']['ChatCompletionChunk'];
export type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

export interface ClientOptions {
  /** The deployment's base URL, ending in `/v1`. */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
}

export function createServiceClient(options: ClientOptions) {
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { ...(options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {}), ...options.headers },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export type ServiceClient = ReturnType<typeof createServiceClient>;

/** A failure the service reported, either as an HTTP error or as an error event inside a stream. */
export class ServiceResponseError extends Error {
  constructor(readonly status: number, readonly envelope: ErrorEnvelope) {
    super(envelope.error.message);
    this.name = 'ServiceResponseError';
  }
}

/**
 * Sends a request without streaming and returns the completion. The operation's 200 answer is
 * JSON or an event stream depending on `stream`; this narrows it to the JSON one.
 */
export async function createChatCompletion(
  client: ServiceClient,
  body: Omit<ChatCompletionRequest, 'stream'>,
  headers: Record<string, string> = {},
): Promise<ChatCompletionResponse> {
  const { data, error, response } = await client.POST('/chat/completions', {
    body: { ...body, stream: false },
    params: { header: headers as never },
  });
  if (error !== undefined) throw new ServiceResponseError(response.status, error);
  return data as ChatCompletionResponse;
}

/**
 * Sends a request with `stream: true` and yields each `data:` event as a typed chunk, until
 * `[DONE]`. An error event inside the stream is thrown as a ServiceResponseError.
 */
export async function* streamChatCompletion(
  client: ServiceClient,
  body: Omit<ChatCompletionRequest, 'stream'>,
  headers: Record<string, string> = {},
): AsyncGenerator<ChatCompletionChunk> {
  const { data, error, response } = await client.POST('/chat/completions', {
    body: { ...body, stream: true },
    params: { header: headers as never },
    parseAs: 'stream',
  });
  if (error !== undefined || !data) throw new ServiceResponseError(response.status, error as ErrorEnvelope);
  const events = data.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
  for await (const event of events) {
    if (event.data === '[DONE]') return;
    const data = JSON.parse(event.data) as ChatCompletionChunk | ErrorEnvelope;
    if ('error' in data) throw new ServiceResponseError(response.status, data);
    yield data;
  }
}
