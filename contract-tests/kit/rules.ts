// The specification's numbered rules and tables, as the report lists them. `core` rules are the
// widely used chat-completion wire format any OpenAI-compatible server can be graded on;
// `extension` rules are this service's additions (tasks, guardrails, cache, precontext).
export interface Rule {
  id: string;
  text: string;
  group: 'core' | 'extension';
  /** Set where the specification leaves the behaviour open ("not shown"): nothing to grade. */
  open?: boolean;
}

export const RULES: Rule[] = [
  { id: '§1', text: 'One endpoint, POST {base_url}/chat/completions', group: 'core' },
  { id: '§2.1', text: 'Request fields and their constraints; invalid bodies are refused', group: 'core' },
  { id: '§2.1 model', text: 'The model id is echoed in the response', group: 'core' },
  { id: '§2.7', text: 'ToolCall: id, type function, function name and JSON arguments', group: 'core' },
  { id: '§2.8', text: 'ChatCompletionResponse: id, object, model, choices (message, finish_reason), usage', group: 'core' },
  { id: '§2.8 id', text: 'Completion ids are service-<digits>; precontext and vcache are present', group: 'extension' },
  { id: '§2.9', text: 'Errors are the envelope {error: {message, type, code}}', group: 'core' },
  { id: '§4.1', text: 'stream: true gives a server-sent event stream ending with data: [DONE]', group: 'core' },
  { id: '§4.2', text: 'reasoning_effort: reasoning in JSON, <think> first in streams', group: 'extension' },
  { id: '§4.3', text: '<task>NAME</task> runs a built-in task; its precontext entry', group: 'extension' },
  { id: '§4.4', text: '<guard>CODES</guard> blocks matching content', group: 'extension' },
  { id: '§4.5', text: 'Tool flow: tool_calls with finish_reason tool_calls, then a tool message answers', group: 'core' },
  { id: '§4.6', text: 'seed and stop sequences', group: 'core', open: true },
  { id: '§4.7', text: 'Response headers', group: 'core', open: true },
  { id: '§4.8', text: 'Token usage in streams', group: 'core', open: true },
  { id: '§5.1', text: 'Every request carries Authorization: Bearer <API_KEY>', group: 'core' },
  { id: '§5.2', text: 'Keys are managed in a dashboard', group: 'core', open: true },
  { id: '§5.3', text: 'A missing, invalid or revoked key gets 401 authentication_error', group: 'core' },
  { id: '§5.4', text: 'HTTP bearer applies to all operations', group: 'core' },
  { id: '§6.1', text: 'Each event is data: <JSON chunk>, blank-line separated; the last is data: [DONE]', group: 'core' },
  { id: '§6.2', text: 'Chunk shape: id, object chat.completion.chunk, choices[{index, delta{role?, content?}, finish_reason}]', group: 'core' },
  { id: '§6.3', text: 'finish_reason is null on intermediate chunks, then stop, length or tool_calls', group: 'core' },
  { id: '§6.4', text: 'x-show-additional-info: a <precontext> chunk before the answer', group: 'extension' },
  { id: '§6.5', text: 'Reasoning streams first, inside <think> tags', group: 'extension' },
  { id: '§6.6', text: 'Tool-call deltas in streams', group: 'core', open: true },
  { id: '§6.7', text: 'Webhooks or other push delivery', group: 'core', open: true },
  { id: '§7', text: 'Error statuses and types: 400 invalid_request_error, 401 authentication_error, …', group: 'core' },
  { id: '§8', text: 'Limits: max_tokens 1–32000, temperature 0–2, top_p 0–1', group: 'core' },
  { id: '§9', text: 'The version is part of the base address, which ends with /v1', group: 'core' },
  { id: 'cache', text: 'The verified cache: a repeated request is answered with vcache: true', group: 'extension' },
];
