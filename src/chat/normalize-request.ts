import type { ChatCompletionRequest, ContentPart, Message, Tool } from '../contract/wire-types.ts';
import type { EngineMessage, EngineTool, EngineToolChoice, GenerationRequest, OutputFormat } from '../engines/engine.ts';
import { invalidRequest } from '../errors/service-error.ts';
import { compileSchema } from '../engines/json-schema.ts';
import { DEFAULT_SCHEMA_LIMITS, type SchemaBudget, type SchemaLimits, schemaBudget } from '../engines/schema-budget.ts';

/**
 * Checks what the schema cannot express and turns the wire request into the engine's request.
 * `null` in an optional field means the same as leaving it out. The caller's JSON Schemas share
 * one budget (`schemaLimits`), so many tools cannot add up to what one schema may not be.
 */
export function normalizeRequest(body: ChatCompletionRequest, signal: AbortSignal,
  schemaLimits: SchemaLimits = DEFAULT_SCHEMA_LIMITS): GenerationRequest {
  if (body.stream_options != null && body.stream !== true) {
    throw invalidRequest('stream_options is only allowed when stream is true', 'invalid_request', 'stream_options');
  }
  const tools = body.tools ?? [];
  checkToolNames(tools);
  const messages = body.messages.map(toEngineMessage);
  checkToolCallIds(messages);
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const budget = schemaBudget(schemaLimits);
  return {
    messages,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop: stop.filter((s) => s !== ''),
    seed: body.seed ?? undefined,
    output: outputFormatOf(body, budget),
    tools: tools.map((tool, i) => compileTool(tool, i, budget)),
    toolChoice: toolChoiceOf(body, tools),
    parallelToolCalls: body.parallel_tool_calls ?? true,
    reasoningEffort: body.reasoning_effort ?? undefined,
    stream: body.stream === true,
    signal,
  };
}

function toEngineMessage(message: Message, i: number): EngineMessage {
  const role = message.role === 'developer' ? 'system' : message.role;
  // openapi.yaml states this rule (Message, allOf); the validator's copy leaves it to this message.
  if (message.content == null && !(role === 'assistant' && message.tool_calls?.length)) {
    throw invalidRequest(`messages[${i}] has no content: content may be left out or null only on an assistant message with tool_calls`,
      'invalid_request', 'messages');
  }
  if (role === 'tool' && !message.tool_call_id) {
    throw invalidRequest(`messages[${i}] has role "tool" but no tool_call_id`, 'invalid_request', 'messages');
  }
  return {
    role,
    at: i,
    content: flattenContent(message.content),
    ...(message.name ? { name: message.name } : {}),
    ...(message.tool_calls?.length ? { toolCalls: message.tool_calls } : {}),
    ...(message.tool_call_id ? { toolCallId: message.tool_call_id } : {}),
  };
}

/** Text parts joined; attachments are named until the MoA router turns them into context. */
export function flattenContent(content: Message['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map(partText).filter((t) => t !== '').join('\n');
}

/** The text parts of the last user message, which tasks read as their query or instructions. */
export function lastUserText(messages: Message[]): string {
  const last = messages.findLast((m) => m.role === 'user');
  return last ? textOf(last.content).trim() : '';
}

/** Only what the caller wrote: the text parts, joined; attachments leave no trace. */
export function textOf(content: Message['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.flatMap((part) => (part.type === 'text' && part.text !== '' ? [part.text] : [])).join('\n');
}

function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image_url':
      return '[image attached]';
    case 'file':
      return `[file attached: ${part.file.filename}]`;
  }
}

function outputFormatOf(body: ChatCompletionRequest, budget: SchemaBudget): OutputFormat {
  const format = body.response_format;
  if (!format || format.type === 'text') return { kind: 'text' };
  if (format.type === 'json_object') {
    return { kind: 'json', name: 'json_object', schema: compileSchema({ type: 'object' }, 'response_format') };
  }
  const { name, schema } = format.json_schema;
  return { kind: 'json', name, schema: compileSchema(schema, 'response_format.json_schema.schema', budget) };
}

function compileTool(tool: Tool, i: number, budget: SchemaBudget): EngineTool {
  const { name, description, parameters } = tool.function;
  return {
    name,
    ...(description ? { description } : {}),
    parameters: compileSchema(parameters ?? { type: 'object', properties: {} }, `tools[${i}].function.parameters`, budget),
  };
}

function checkToolNames(tools: Tool[]): void {
  const seen = new Set<string>();
  for (const tool of tools) {
    if (seen.has(tool.function.name)) {
      throw invalidRequest(`tools: the function name "${tool.function.name}" is used twice`, 'invalid_request', 'tools');
    }
    seen.add(tool.function.name);
  }
}

/** A tool message must answer a call an earlier assistant message made. */
function checkToolCallIds(messages: EngineMessage[]): void {
  const calls = new Set<string>();
  messages.forEach((m, i) => {
    m.toolCalls?.forEach((c) => calls.add(c.id));
    if (m.role === 'tool' && !calls.has(m.toolCallId ?? '')) {
      throw invalidRequest(`messages[${i}].tool_call_id "${m.toolCallId}" matches no earlier tool call`,
        'invalid_request', 'messages');
    }
  });
}

function toolChoiceOf(body: ChatCompletionRequest, tools: Tool[]): EngineToolChoice {
  const choice = body.tool_choice ?? 'auto';
  if (tools.length === 0) {
    if (choice === 'auto' || choice === 'none') return 'none';
    throw invalidRequest('tool_choice asks for a tool call, but no tools were sent', 'invalid_request', 'tool_choice');
  }
  if (typeof choice === 'string') return choice;
  const name = choice.function.name;
  if (!tools.some((t) => t.function.name === name)) {
    throw invalidRequest(`tool_choice names the function "${name}", which is not among tools`,
      'unknown_function', 'tool_choice');
  }
  return { name };
}
