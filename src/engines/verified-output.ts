import { type Engine, type GenerationEvent, type GenerationRequest, spentOn, type TokenUsage } from './engine.ts';
import { outputValidationFailed } from '../errors/service-error.ts';
import { type FoldedGeneration, foldEvents, replayEvents } from './fold-events.ts';
import { checkJson } from './json-schema.ts';

const ATTEMPTS = 2;

/**
 * For engines that cannot constrain decoding (an upstream): when the answer must be JSON or a
 * tool call, the whole answer is collected, checked against the schema (Ajv), generated once more
 * if it does not conform, and otherwise refused with a clear 500. The checked answer is then
 * replayed as events, so streams carry only output that passed. An answer cut at `max_tokens`
 * (`finish_reason: length`) is passed on as it is: it cannot be whole.
 */
export function withVerifiedOutput(engine: Engine): Engine {
  return {
    ...engine,
    generate(request) {
      const structured = request.output.kind === 'json' || (request.tools.length > 0 && request.toolChoice !== 'none');
      return structured ? verified(engine, request) : engine.generate(request);
    },
  };
}

/**
 * Every attempt is billed, so together they stay within `max_tokens`: a second attempt gets what
 * the first one left. An answer cut at the budget keeps `finish_reason: length`, tool call or not.
 */
async function* verified(engine: Engine, request: GenerationRequest): AsyncGenerator<GenerationEvent> {
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  let problem = '';
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const left = request.maxTokens === undefined ? undefined : request.maxTokens - usage.completionTokens;
    if (left !== undefined && left <= 0) {
      problem += `; max_tokens ${request.maxTokens} left no room for another attempt`;
      break;
    }
    // Only the whole answer can be checked, so it is asked for whole.
    const folded = await foldEvents(engine.generate({ ...request, stream: false, ...(left !== undefined ? { maxTokens: left } : {}) }));
    usage.promptTokens += folded.usage.promptTokens;
    usage.completionTokens += folded.usage.completionTokens;
    problem = problemWith(folded, request);
    if (problem === '' || folded.finishReason === 'length') {
      const finishReason = folded.finishReason !== 'length' && folded.toolCalls.length ? 'tool_calls' : folded.finishReason;
      yield* replayEvents({ ...folded, finishReason, usage });
      return;
    }
  }
  throw spentOn(outputValidationFailed(
    `The model's answer did not conform after ${ATTEMPTS} attempts: ${problem}. It is safe to retry.`), usage);
}

/** '' when the answer is what the request asked for, else the reason it is not. */
export function problemWith(folded: FoldedGeneration, request: GenerationRequest): string {
  const { toolChoice, tools } = request;
  if (folded.toolCalls.length === 0) {
    if (toolChoice === 'required' || typeof toolChoice === 'object') return 'a tool call was required but none was made';
    if (request.output.kind === 'json') {
      const check = checkJson(folded.content, request.output.schema);
      return check.ok ? '' : `the content is ${check.reason}`;
    }
    return '';
  }
  for (const call of folded.toolCalls) {
    const tool = tools.find((t) => t.name === call.function.name);
    if (!tool) return `the tool call names "${call.function.name}", which is not among tools`;
    if (typeof toolChoice === 'object' && call.function.name !== toolChoice.name) {
      return `the tool call names "${call.function.name}" instead of "${toolChoice.name}"`;
    }
    const check = checkJson(call.function.arguments, tool.parameters);
    if (!check.ok) return `the arguments of ${call.function.name} are ${check.reason}`;
  }
  return '';
}
