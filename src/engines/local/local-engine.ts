import {
  type ChatHistoryItem,
  getLlama,
  LlamaChat,
  type LlamaContextSequence,
  type LlamaGrammar,
  LlamaLogLevel,
  resolveChatWrapper,
} from 'node-llama-cpp';
import type { FinishReason, ReasoningEffort } from '../../contract/wire-types.ts';
import { AsyncQueue } from '../async-queue.ts';
import { invalidRequest } from '../../errors/service-error.ts';
import type { Engine, EngineTool, GenerationEvent, GenerationRequest, TokenUsage } from '../engine.ts';
import { describeTools, toChatHistory, withInstruction } from './chat-history.ts';

export interface LocalEngineOptions {
  modelPath: string;
  /** Tokens of context per sequence. */
  contextSize: number;
  threads: number;
  /** Sequences generated at once; requests beyond them wait in the queue. */
  parallel: number;
  /** Tokens a request that sets no `max_tokens` may generate (`DEFAULT_MAX_TOKENS`). */
  defaultMaxTokens: number;
}

/** The contract's largest `max_tokens`, also its default: it means "as much as the window allows". */
const CONTRACT_MAX_TOKENS = 32000;
const THINKING_BUDGET: Record<ReasoningEffort, number> = { low: 128, medium: 512, high: 2048 };
/**
 * Sampling where the request sets none: llama.cpp's server defaults, with its classic repetition
 * penalty. A small model sampled at temperature 1 with no penalty can ramble for minutes.
 */
const SAMPLING = { temperature: 0.8, topP: 0.95, topK: 40, minP: 0.05, repeatPenalty: { penalty: 1.1, lastTokens: 64 } };
const DECISION_MAX_TOKENS = 64;
/** The holder of a sequence read for a request without a prompt cache scope: no scope equals it. */
const NOBODYS = Symbol('nobody\'s');

interface PassResult {
  text: string;
  finishReason: FinishReason;
  usage: TokenUsage;
}

/** One generation pass on this generation's sequence, under its stop signal. */
type Pass = (history: ChatHistoryItem[], options: PassOptions, onText: (text: string) => void) => Promise<PassResult>;

interface PassOptions {
  maxTokens: number;
  grammar?: LlamaGrammar;
  stop?: string[];
}

/**
 * The embedded engine: a GGUF model run by node-llama-cpp on the CPU, from prebuilt binaries only.
 * JSON output and tool arguments are decoded under a grammar made from their schema; a tool is
 * chosen by a short grammar-constrained decision; reasoning is a real first thinking pass whose
 * trace the answer pass reads (small models have no native reasoning).
 */
export async function createLocalEngine(options: LocalEngineOptions): Promise<Engine> {
  const llama = await getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, maxThreads: options.threads, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: options.modelPath, gpuLayers: 0 });
  const context = await model.createContext({
    contextSize: options.contextSize * options.parallel,
    sequences: options.parallel,
    threads: options.threads,
  });
  const sequences: LlamaContextSequence[] = Array.from({ length: options.parallel }, () => context.getSequence());
  const free = [...sequences];
  /**
   * Whose prompt each sequence holds the reading of (GenerationRequest.promptCacheScope; NOBODYS for
   * a request without one): only that key may reuse it. Absent: it holds none.
   */
  const holders = new Map<LlamaContextSequence, string | typeof NOBODYS>();
  /** A free sequence, the one holding this scope's last prompt if any, cleared when it holds anyone else's. */
  async function takeSequence(scope: string | undefined): Promise<LlamaContextSequence> {
    const own = scope === undefined ? -1 : free.findIndex((sequence) => holders.get(sequence) === scope);
    const [sequence] = own >= 0 ? free.splice(own, 1) : [free.pop()];
    if (!sequence) throw new Error('no free sequence: the queue must limit concurrency to `parallel`');
    try {
      if (holders.has(sequence) && holders.get(sequence) !== scope) await forget(sequence);
    } catch (err) {
      free.push(sequence);
      throw err;
    }
    holders.set(sequence, scope ?? NOBODYS);
    return sequence;
  }
  /** Clears a sequence; until that succeeds it still counts as holding what it held. */
  async function forget(sequence: LlamaContextSequence): Promise<void> {
    await sequence.clearHistory();
    holders.delete(sequence);
  }
  const jsonGrammar = await llama.getGrammarFor('json');
  // Resolved once: resolving it anew for every LlamaChat cost about half a second per request.
  const chatWrapper = resolveChatWrapper(model);
  /** Every token generated, billed or not: what a stopped generation really cost. */
  let generated = 0;

  /** One generation on one sequence, its text streamed to `onText`. */
  async function runPass(sequence: LlamaContextSequence, history: ChatHistoryItem[], request: GenerationRequest,
    pass: PassOptions, onText: (text: string) => void): Promise<PassResult> {
    // A seed reproduces an answer only from a clean state: cached tokens would change the sampling.
    if (request.seed !== undefined) await sequence.clearHistory();
    // node-llama-cpp reads maxTokens 0 as "no limit": a pass must never be asked for less than one.
    if (!(pass.maxTokens >= 1)) throw new Error(`a generation pass needs at least one token, was given ${pass.maxTokens}`);
    const chat = new LlamaChat({ contextSequence: sequence, chatWrapper });
    try {
      let completionTokens = 0;
      const result = await chat.generateResponse(history, {
        maxTokens: pass.maxTokens,
        temperature: request.temperature ?? SAMPLING.temperature,
        topP: request.topP ?? SAMPLING.topP,
        topK: SAMPLING.topK,
        minP: SAMPLING.minP,
        repeatPenalty: SAMPLING.repeatPenalty,
        ...(request.seed !== undefined ? { seed: request.seed } : {}),
        ...(pass.grammar ? { grammar: pass.grammar } : {}),
        ...(pass.stop?.length ? { customStopTriggers: pass.stop } : {}),
        signal: request.signal,
        stopOnAbortSignal: true,
        onTextChunk: onText,
        onToken: (tokens) => {
          completionTokens += tokens.length;
          generated += tokens.length;
        },
      });
      // Stopped because the client left: not an answer that ended, so it must not end like one.
      if (result.metadata.stopReason === 'abort' || request.signal.aborted) throw request.signal.reason ?? new Error('aborted');
      const finishReason: FinishReason = result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop';
      return { text: result.response, finishReason, usage: { promptTokens: promptTokens(history), completionTokens } };
    } finally {
      chat.dispose({ disposeSequence: false });
    }
  }

  const promptTokens = (history: ChatHistoryItem[]) =>
    chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer).length;

  /** Runs a pass (`run`) and yields its text as events of the given shape; returns the pass's result. */
  async function* streamPass(run: (onText: (text: string) => void) => Promise<PassResult>,
    toEvent: (text: string) => GenerationEvent): AsyncGenerator<GenerationEvent, PassResult> {
    const queue = new AsyncQueue<string>();
    const done = run((text) => queue.push(text));
    done.then(() => queue.end(), (err) => queue.fail(err));
    for await (const text of queue) yield toEvent(text);
    return await done;
  }

  /**
   * Tokens the answer may use: an explicit `max_tokens` must fit in what the window leaves; without
   * one, the default cap or what the window leaves, whichever is less.
   */
  function answerBudget(history: ChatHistoryItem[], request: GenerationRequest): number {
    const used = promptTokens(history);
    const left = options.contextSize - used;
    const asked = request.maxTokens;
    if (left <= 0 || (asked !== undefined && asked < CONTRACT_MAX_TOKENS && asked > left)) {
      throw invalidRequest(
        `The conversation takes ${used} tokens; with max_tokens ${asked ?? 'unset'} it exceeds this model's context window of ${options.contextSize} tokens.`,
        'context_length_exceeded', 'messages');
    }
    return Math.min(asked ?? options.defaultMaxTokens, left);
  }

  async function grammarFor(schema: Record<string, unknown>): Promise<LlamaGrammar> {
    try {
      return await llama.createGrammarForJsonSchema(schema as never);
    } catch {
      return jsonGrammar; // a schema the grammar builder cannot express: any JSON, checked by Ajv after
    }
  }

  /** Which tool to call, if any: a short answer constrained to the tool names. */
  async function chooseTool(pass: Pass, history: ChatHistoryItem[], request: GenerationRequest,
    usage: TokenUsage, maxTokens: number): Promise<EngineTool | undefined> {
    const { tools, toolChoice } = request;
    if (tools.length === 0 || toolChoice === 'none') return undefined;
    if (typeof toolChoice === 'object') return tools.find((t) => t.name === toolChoice.name);
    const names = tools.map((t) => t.name);
    const choices = toolChoice === 'required' ? names : [...names, 'none'];
    const instruction = `You can call these tools:\n${describeTools(tools)}\n` +
      (toolChoice === 'required'
        ? 'Name the tool to call now, as JSON {"tool": NAME}.'
        : 'If one of them is needed to answer the last message, name it; otherwise say "none". Reply as JSON {"tool": NAME}.');
    const grammar = await grammarFor({ type: 'object', properties: { tool: { enum: choices } }, required: ['tool'] });
    const decision = await pass(withInstruction(history, instruction), { maxTokens: Math.min(DECISION_MAX_TOKENS, maxTokens), grammar }, () => {});
    add(usage, decision.usage);
    const chosen = parseToolName(decision.text);
    return tools.find((t) => t.name === chosen) ?? (toolChoice === 'required' ? tools[0] : undefined);
  }

  return {
    kind: 'local',
    description: `local model ${options.modelPath} (node-llama-cpp, CPU, context ${options.contextSize}, ${options.parallel} parallel)`,
    countTokens: (text) => model.tokenize(text).length,
    generatedTokens: () => generated,
    evaluatedPromptTokens: () => sequences.reduce((sum, sequence) => sum + sequence.tokenMeter.usedInputTokens, 0),
    close: async () => {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
    async *generate(request) {
      const scope = request.promptCacheScope;
      const sequence = await takeSequence(scope);
      // This generation's own stop, linked to the caller's: an answer closed by the service (the
      // output guard, a failed check: return() or throw() here) stops llama.cpp as a caller's
      // leaving does, and the sequence goes back only once its last pass has ended.
      const stop = new AbortController();
      const passRequest = { ...request, signal: AbortSignal.any([request.signal, stop.signal]) };
      let running: Promise<unknown> = Promise.resolve();
      const pass: Pass = (history, options, onText) => {
        const done = runPass(sequence, history, passRequest, options, onText);
        running = done.catch(() => {});
        return done;
      };
      try {
        const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
        let history = toChatHistory(request.messages);
        // max_tokens bounds every pass together — reasoning, tool decision, answer — as
        // max_completion_tokens does elsewhere: what is billed is what was allowed.
        const limit = answerBudget(history, request);
        const room = () => Math.min(limit - usage.completionTokens, options.contextSize - promptTokens(history));
        const cut = { type: 'done', finishReason: 'length', usage } as const;

        // Reasoning gets at most half the budget; a budget of one token leaves it none.
        const thinkingTokens = request.reasoningEffort ? Math.min(THINKING_BUDGET[request.reasoningEffort], Math.floor(limit / 2)) : 0;
        if (request.reasoningEffort && thinkingTokens >= 1) {
          const thinking = withInstruction(history,
            'Think step by step about how to answer this. Write only your reasoning; do not give the final answer yet.');
          const trace = yield* streamPass((onText) => pass(thinking, { maxTokens: thinkingTokens }, onText), (text) => ({ type: 'reasoning', text }));
          add(usage, trace.usage);
          history = withInstruction(history, `Your reasoning so far:\n${trace.text.trim()}\n\nNow give only the final answer.`);
        }

        if (room() <= 0) {
          yield cut;
          return;
        }
        const tool = await chooseTool(pass, history, request, usage, room());
        if (tool && room() <= 0) {
          yield cut;
          return;
        }
        if (tool) {
          const instruction = `Call the tool ${tool.name}. Reply with only its arguments as JSON that matches this schema: ${JSON.stringify(tool.parameters.schema)}`;
          const id = `call_${crypto.randomUUID().replaceAll('-', '').slice(0, 24)}`;
          yield { type: 'tool_call', index: 0, id, name: tool.name, arguments: '' };
          const grammar = await grammarFor(tool.parameters.schema);
          const args = yield* streamPass((onText) => pass(withInstruction(history, instruction), { maxTokens: room(), grammar }, onText),
            (text) => ({ type: 'tool_call', index: 0, arguments: text }));
          add(usage, args.usage);
          yield { type: 'done', finishReason: args.finishReason === 'length' ? 'length' : 'tool_calls', usage };
          return;
        }

        if (room() <= 0) {
          yield cut; // the tool decision used what was left
          return;
        }
        const grammar = request.output.kind === 'json' ? await grammarFor(request.output.schema.schema) : undefined;
        const answer = yield* streamPass((onText) => pass(history, { maxTokens: room(), ...(grammar ? { grammar } : {}), stop: request.stop }, onText),
          (text) => ({ type: 'content', text }));
        add(usage, answer.usage);
        yield { type: 'done', finishReason: answer.finishReason, usage };
      } finally {
        stop.abort(new Error('the answer was closed'));
        await running;
        try {
          if (scope === undefined) await forget(sequence); // nothing of a request without a scope stays behind
        } finally {
          free.push(sequence);
        }
      }
    },
  };
}

function parseToolName(text: string): string | undefined {
  try {
    return (JSON.parse(text) as { tool?: string }).tool;
  } catch {
    return undefined; // cut short: no decision
  }
}

function add(total: TokenUsage, more: TokenUsage): void {
  total.promptTokens += more.promptTokens;
  total.completionTokens += more.completionTokens;
}

