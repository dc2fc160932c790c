import type { ChatCompletionRequest } from '../api/types.ts';
import type { GenerationEvent, GenerationRequest } from '../engines/engine.ts';
import { invalidRequest } from '../http/errors.ts';
import { type AttachmentLimits, resolveAttachments } from '../inputs/attachments.ts';
import type { TaskRegistry } from '../tasks/registry.ts';
import type { PrecontextEntry } from '../tasks/task.ts';
import { lastUserText } from './moa-router.ts';

/** Schema keywords that only describe; a schema with nothing else accepts any JSON. */
const ANNOTATIONS = new Set(['title', 'description', '$schema', '$id', 'type', 'additionalProperties']);

/**
 * `<task>NAME</task>`: the named task runs directly, without the language model; the answer's
 * content is the JSON text of its precontext entry. The response format must be open (any JSON),
 * except for the scraper, whose schema says what to extract.
 */
export async function runTaskMode(
  name: string,
  instructions: string,
  body: ChatCompletionRequest,
  generation: GenerationRequest,
  deps: { tasks: TaskRegistry; attachmentLimits: AttachmentLimits },
): Promise<{ events: AsyncIterable<GenerationEvent>; precontext: PrecontextEntry[] }> {
  const task = deps.tasks.get(name);
  if (task.name !== 'scraper') checkOpenFormat(body);
  const attachments = await resolveAttachments(body.messages, deps.attachmentLimits);
  const entry = await task.run({ attachments, text: lastUserText(body.messages), instructions, output: generation.output, signal: generation.signal });
  async function* events(): AsyncGenerator<GenerationEvent> {
    yield { type: 'content', text: JSON.stringify(entry) };
    yield { type: 'done', finishReason: 'stop', usage: { promptTokens: 0, completionTokens: 0 } };
  }
  return { events: events(), precontext: [entry] };
}

function checkOpenFormat(body: ChatCompletionRequest): void {
  const format = body.response_format;
  if (!format || format.type === 'json_object') return;
  const schema = format.type === 'json_schema' ? (format.json_schema.schema as Record<string, unknown>) : undefined;
  const open = schema !== undefined && Object.keys(schema).every((k) => ANNOTATIONS.has(k)) && schema.additionalProperties !== false;
  if (!open) {
    throw invalidRequest('In task mode, response_format must be an open JSON schema (for example {"type":"json_schema","json_schema":{"name":"task","schema":{}}}): the task fixes the shape of its result.',
      'invalid_request', 'response_format');
  }
}
