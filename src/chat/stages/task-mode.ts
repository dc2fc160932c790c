import type { ChatCompletionRequest } from '../../contract/wire-types.ts';
import { textAnswer } from '../../engines/fold-events.ts';
import { invalidRequest } from '../../errors/service-error.ts';
import type { TaskRegistry } from '../../tasks/registry.ts';
import { lastUserText } from '../normalize-request.ts';
import type { Stage } from '../pipeline.ts';

/** Schema keywords that only describe; a schema with nothing else accepts any JSON. */
const ANNOTATIONS = new Set(['title', 'description', '$schema', '$id', 'type', 'additionalProperties']);

export interface TaskModeDeps {
  tasks: TaskRegistry;
}

/**
 * `<task>NAME</task>`: the named task runs directly, without the language model; the answer's
 * content is the JSON text of its precontext entry. The response format must be open (any JSON),
 * except for the scraper, whose schema says what to extract. The work is recorded on the request's
 * meter, and the quota stage bills it and reports it in `usage`. Without the directive: the next stage.
 */
export function taskMode(deps: TaskModeDeps): Stage {
  return async function taskMode(ctx, next) {
    const name = ctx.directives.task;
    if (name === undefined) return next(ctx);
    const task = deps.tasks.get(name);
    if (task.name !== 'scraper') checkOpenFormat(ctx.body);
    const attachments = await ctx.attachments();
    const text = lastUserText(ctx.body.messages);
    const input = { attachments, text, instructions: ctx.directives.instructions, output: ctx.generation.output, signal: ctx.signal, caller: ctx.caller.keyId };
    // What it read is paid, in its units (src/chat/prices.ts), and its model passes in tokens.
    const entry = ctx.meter ? await ctx.meter.run(task, input) : await task.run(input);
    return { events: textAnswer(JSON.stringify(entry)), precontext: [entry] };
  };
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
