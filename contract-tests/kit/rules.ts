// The specification's numbered rules and tables, as the report lists them. `core` rules are the
// widely used chat-completion wire format any OpenAI-compatible server can be graded on;
// `extension` rules are this service's additions (tasks, guardrails, cache, precontext).
export interface Rule {
  id: string;
  text: string;
  group: 'core' | 'extension';
  /**
   * Set where the specification leaves the behaviour open ("not shown"), or where no black-box
   * check can exist (a case that cannot be driven from outside): nothing to grade.
   */
  open?: boolean;
  /** Why an open rule is not graded, as the report shows it. */
  why?: string;
}

const LEFT_OPEN = 'the specification leaves it open ("not shown")';

export const RULES: Rule[] = [
  { id: '§1', text: 'One endpoint, POST {base_url}/chat/completions', group: 'core' },
  { id: '§2.1', text: 'Request fields and their constraints; invalid bodies are refused, unknown fields accepted', group: 'core' },
  // §2.1, the request fields' table, row by row.
  { id: '§2.1 model', text: 'model: a string, required; the model id is echoed in the response', group: 'core' },
  { id: '§2.1 messages', text: 'messages: an array of Message, required', group: 'core' },
  { id: '§2.1 stream', text: 'stream: default false (one JSON answer); true means server-sent events', group: 'core' },
  { id: '§2.1 response_format', text: 'response_format: a ResponseFormat (default text)', group: 'core' },
  { id: '§2.1 tools', text: 'tools: an array of Tool the model may call', group: 'core' },
  { id: '§2.1 tool_choice', text: 'tool_choice: a string or an object, default auto', group: 'core' },
  { id: '§2.1 reasoning_effort', text: 'reasoning_effort: low, medium or high; absent means off', group: 'extension' },
  { id: '§2.1 max_tokens', text: 'max_tokens: an integer, 1 to 32000 inclusive', group: 'core' },
  { id: '§2.1 temperature', text: 'temperature: 0 to 2 inclusive', group: 'core' },
  { id: '§2.1 top_p', text: 'top_p: 0 to 1 inclusive', group: 'core' },
  // §2.2 Message.
  { id: '§2.2 role', text: 'role: one of system, user, assistant, tool', group: 'core' },
  { id: '§2.2 content', text: 'content: a string or an array of content parts, required', group: 'core' },
  { id: '§2.2 name', text: 'name: the participant\'s name, optional', group: 'core' },
  { id: '§2.2 tool_calls', text: 'tool_calls: the calls an assistant message holds', group: 'core' },
  { id: '§2.2 tool_call_id', text: 'tool_call_id: required on a tool message, the id of the call it answers', group: 'core' },
  // §2.3 ContentPart.
  { id: '§2.3 text', text: 'A text part {type: text, text}', group: 'core' },
  { id: '§2.3 image_url', text: 'An image part {type: image_url, image_url: {url}} (a data URL): accepted, or refused in the envelope where not offered', group: 'core' },
  { id: '§2.3 file', text: 'A file part {type: file, file: {filename, file_data}}: accepted, or refused in the envelope where not offered', group: 'core' },
  // §2.4 ResponseFormat.
  { id: '§2.4 type', text: 'type: text (the default) or json_schema', group: 'core' },
  { id: '§2.4 json_schema', text: 'json_schema: required when type is json_schema', group: 'core' },
  { id: '§2.4 json_schema.name', text: 'json_schema.name: required', group: 'core' },
  { id: '§2.4 json_schema.schema', text: 'json_schema.schema: the answer is JSON that validates against it', group: 'core' },
  { id: '§2.4 json_schema.strict', text: 'json_schema.strict: the schema is enforced strictly', group: 'core' },
  // §2.5 Tool and ToolFunction.
  { id: '§2.5 type', text: 'A tool\'s type is always function', group: 'core' },
  { id: '§2.5 function', text: 'function: the function definition, required', group: 'core' },
  { id: '§2.5 function.name', text: 'function.name: required', group: 'core' },
  { id: '§2.5 function.description', text: 'function.description: optional', group: 'core' },
  { id: '§2.5 function.parameters', text: 'function.parameters: optional; a function without them can be called', group: 'core' },
  // §2.6 ToolChoice.
  { id: '§2.6 auto', text: 'auto (the default): the model decides whether and which tool to call', group: 'core' },
  { id: '§2.6 none', text: 'none: the model calls no tool', group: 'core' },
  { id: '§2.6 required', text: 'required: the model calls at least one tool', group: 'core' },
  { id: '§2.6 named', text: '{type: function, function: {name}}: a call to the named function', group: 'core' },
  // §2.7 ToolCall.
  { id: '§2.7 id', text: 'A tool call\'s id: a string', group: 'core' },
  { id: '§2.7 type', text: 'A tool call\'s type: always function', group: 'core' },
  { id: '§2.7 function.name', text: 'function.name: the function to call', group: 'core' },
  { id: '§2.7 function.arguments', text: 'function.arguments: the arguments, JSON-encoded in a string', group: 'core' },
  // §2.8 ChatCompletionResponse.
  { id: '§2.8 id', text: 'id: a unique completion id (a non-empty string, another for each completion)', group: 'core' },
  { id: '§2.8 id shape', text: 'The completion id\'s shape is service-<digits>', group: 'extension' },
  { id: '§2.8 object', text: 'object: always chat.completion', group: 'core' },
  { id: '§2.8 model', text: 'model: the model used', group: 'core' },
  { id: '§2.8 choices', text: 'choices: each with index, an assistant message and finish_reason stop, length or tool_calls', group: 'core' },
  { id: '§2.8 usage', text: 'usage: prompt_tokens, completion_tokens, total_tokens (their sum)', group: 'core' },
  { id: '§2.8 reasoning', text: 'reasoning: present when reasoning_effort was set', group: 'extension' },
  { id: '§2.8 precontext', text: 'precontext: the raw outputs of the internal tasks that ran', group: 'extension' },
  { id: '§2.8 vcache', text: 'vcache: true when served from the verified cache', group: 'extension' },
  { id: '§2.9', text: 'Errors are the envelope {error: {message, type, code}}', group: 'core' },
  // §4: the request headers' table.
  { id: '§4 Authorization', text: 'Authorization: Bearer <API_KEY>, required', group: 'core' },
  { id: '§4 Content-Type', text: 'Content-Type: application/json (with or without a charset parameter) marks a JSON body', group: 'core' },
  { id: '§4 x-show-additional-info', text: 'x-show-additional-info: true puts precontext at the start of a stream; none by default', group: 'extension' },
  { id: '§4 x-service-zdr', text: 'x-service-zdr: true, zero data retention: the request is stored nowhere (seen from outside: a repeat is not served from the cache)', group: 'extension' },
  { id: '§4 x-service-bypass-cache', text: 'x-service-bypass-cache: true skips the verified cache', group: 'extension' },
  { id: '§4 x-service-bypass-moa', text: 'x-service-bypass-moa: true runs only the model, no internal task on attachments', group: 'extension' },
  // §4: the responses' table.
  { id: '§4 200 json', text: '200 application/json: a ChatCompletionResponse when not streaming', group: 'core' },
  { id: '§4 200 event-stream', text: '200 text/event-stream: the chunks when stream is true', group: 'core' },
  { id: '§4 errors', text: '400, 401, 402, 413, 429, 500, 503: application/json, the ErrorEnvelope', group: 'core' },
  // §4's numbered rules.
  { id: '§4.1', text: 'stream: true gives a server-sent event stream ending with data: [DONE]', group: 'core' },
  { id: '§4.2', text: 'reasoning_effort: reasoning in JSON, <think> first in streams', group: 'extension' },
  { id: '§4.3', text: '<task>NAME</task> runs a built-in task; its precontext entry', group: 'extension' },
  { id: '§4.4', text: '<guard>CODES</guard> blocks matching content', group: 'extension' },
  { id: '§4.5', text: 'Tool flow: tool_calls with finish_reason tool_calls, then a tool message answers', group: 'core' },
  { id: '§4.6', text: 'seed and stop sequences', group: 'core', open: true, why: LEFT_OPEN },
  { id: '§4.7', text: 'Response headers', group: 'core', open: true, why: LEFT_OPEN },
  { id: '§4.8', text: 'Token usage in streams', group: 'core', open: true, why: LEFT_OPEN },
  { id: '§5.1', text: 'Every request carries Authorization: Bearer <API_KEY>', group: 'core' },
  { id: '§5.2', text: 'Keys are managed in a dashboard', group: 'core', open: true, why: 'about a dashboard, not the endpoint: nothing a request can show' },
  { id: '§5.3', text: 'A missing, invalid or revoked key gets 401 authentication_error', group: 'core' },
  { id: '§5.4', text: 'HTTP bearer applies to all operations', group: 'core' },
  { id: '§6.1', text: 'Each event is data: <JSON chunk>, blank-line separated; the last is data: [DONE]', group: 'core' },
  { id: '§6.2', text: 'Chunk shape: id, object chat.completion.chunk, choices[{index, delta{role?, content?}, finish_reason}]', group: 'core' },
  { id: '§6.3', text: 'finish_reason is null on intermediate chunks, then stop, length or tool_calls', group: 'core' },
  { id: '§6.4', text: 'x-show-additional-info: a <precontext> chunk before the answer', group: 'extension' },
  { id: '§6.5', text: 'Reasoning streams first, inside <think> tags', group: 'extension' },
  { id: '§6.6', text: 'Tool-call deltas in streams', group: 'core', open: true, why: LEFT_OPEN },
  { id: '§6.7', text: 'Webhooks or other push delivery', group: 'core', open: true, why: LEFT_OPEN },
  // §7: the error table, row by row.
  { id: '§7 400', text: '400 invalid_request_error: a malformed body, or one without a required field', group: 'core' },
  { id: '§7 401', text: '401 authentication_error: the key is missing, invalid or revoked', group: 'core' },
  { id: '§7 402', text: '402 insufficient_quota: not enough credits (graded with --key-without-credits)', group: 'core' },
  { id: '§7 413', text: '413 payload_too_large: the body is over the size limit (graded with --body-limit-bytes)', group: 'core' },
  { id: '§7 429', text: '429 rate_limit_error: over the rate limit (graded with --key-low-limit)', group: 'core' },
  { id: '§7 500', text: '500 internal_error: a server-side failure', group: 'core', open: true,
    why: 'a server-side failure cannot be caused from outside by a correct server\'s client' },
  { id: '§7 503', text: '503 service_unavailable: a temporary capacity issue', group: 'core', open: true,
    why: 'a capacity shortage cannot be caused from outside without overloading the server' },
  // §8: the limits' table.
  { id: '§8 max_tokens', text: 'max_tokens: 1 to 32000; 0 and 32001 are refused', group: 'core' },
  { id: '§8 context window', text: 'Context window 1M tokens: input tokens plus max_tokens cannot exceed it', group: 'core', open: true,
    why: 'a request over a 1M-token window (megabytes of text) cannot be sent in a test' },
  { id: '§8 temperature', text: 'temperature: 0 to 2; above or below is refused', group: 'core' },
  { id: '§8 top_p', text: 'top_p: 0 to 1; above or below is refused', group: 'core' },
  { id: '§9', text: 'The version is part of the base address, which ends with /v1', group: 'core' },
  { id: 'cache', text: 'The verified cache: a repeated request is answered with vcache: true', group: 'extension' },
];
