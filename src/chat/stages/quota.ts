import { type GenerationEvent, type GenerationRequest, promptText, type TokenUsage } from '../../engines/engine.ts';
import { insufficientQuota, invalidRequest, rateLimited } from '../../errors/service-error.ts';
import type { TaskName } from '../../tasks/task.ts';
import { Meter } from '../meter.ts';
import { addUnits, boundUnits, creditsFor as priceOf, type Prices, type WorkBounds } from '../prices.ts';
import { SCRAPER_EXTRACTION_MAX_TOKENS } from '../../tasks/scraper/scraper-task.ts';
import type { RateDecision, Store } from '../../store/store.ts';
import type { Completion, Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

export interface QuotaOptions {
  /** Credits per 1,000 prompt and completion tokens (`CREDITS_PER_1K_*`) and per task unit (`CREDITS_PER_*`). */
  prices: Prices;
  /** The most a task may read (page, image and duration limits), for reservations; defaults below. */
  bounds?: WorkBounds;
  /** Service-wide per-key limits for keys without their own (`DEFAULT_RPM`, `DEFAULT_TPM`); null: none. */
  defaults: { rpm: number | null; tpm: number | null };
  /** Tokens in a text by the model's tokenizer, where the engine has one. */
  countTokens?: (text: string) => number;
  now?: () => number;
}

/** The contract's largest `max_tokens`, and its default. */
const CONTRACT_MAX_TOKENS = 32000;
/** What a chat template adds around each message, roughly. */
const TOKENS_PER_MESSAGE = 8;
/** The deployment defaults of PDF_MAX_PAGES, DOCUMENT_MAX_IMAGES and AUDIO_MAX_SECONDS. */
const DEFAULT_BOUNDS: WorkBounds = { pdfMaxPages: 20, documentMaxImages: 16, audioMaxSeconds: 900 };
/** Which tasks the MoA layer may run on a request's attachments (src/chat/stages/moa-router.ts). */
const MOA_TASKS: TaskName[] = ['ocr', 'object_detection', 'speech_to_text'];

/**
 * Rate limits and credits, before any work. A key's requests and tokens per minute are admitted
 * by the store's GCRA (429 with `Retry-After` past them; every answer of a limited key carries the
 * `x-ratelimit-*` headers); a request larger than a minute's tokens is a 400. Then the most the
 * request can cost (its prompt, its max tokens, the most its tasks can read) is reserved from the
 * key's balance in one atomic step (402 when the balance cannot cover it). Later stages record what
 * they really did on the request's meter; when the answer ends, however it ends, that real cost is
 * taken (above the reservation too) and reported in the `done` event's usage (`taskUnits`,
 * `credits`). A cache hit costs nothing; an answer that ends early (a caller gone, a failure, the
 * output guard) pays the tasks that ran and the tokens generated, none if it generated none.
 * The key of `SERVICE_API_KEY` (id `env`) has no balance.
 */
export function quota(store: Store, options: QuotaOptions): Stage {
  const now = options.now ?? Date.now;
  const bounds = options.bounds ?? DEFAULT_BOUNDS;
  const count = (text: string) => (options.countTokens ? options.countTokens(text) : Math.ceil(Buffer.byteLength(text) / 3));

  return async function quota(ctx, next) {
    const { keyId } = ctx.caller;
    const promptTokens = estimatePromptTokens(ctx.generation, options.countTokens);
    const limits = { rpm: ctx.caller.rpm ?? options.defaults.rpm, tpm: ctx.caller.tpm ?? options.defaults.tpm };
    const headers = await admit(store, keyId, limits, promptTokens, ctx.generation.maxTokens, now());

    const maxTokens = ctx.generation.maxTokens ?? CONTRACT_MAX_TOKENS;
    const reserved = priceOf(options.prices, await mostUsed(ctx, promptTokens, maxTokens, bounds));
    // A request whose reservation is 0 is still metered: its real cost may be more (a task's audio
    // was longer than could be known).
    const metered = keyId !== 'env';
    if (metered && reserved > 0) {
      const reservation = await store.reserveCredits(keyId, reserved);
      if (!reservation.ok) {
        throw insufficientQuota(`This request may cost up to ${reserved} credits (its prompt, max_tokens ${maxTokens} and the most its tasks can read); the key's balance is ${reservation.balance}. Top it up, or send a smaller max_tokens.`);
      }
    }
    /**
     * Takes the real cost: gives back what was reserved beyond it, or takes what it went beyond
     * (the MoA text made the prompt longer than could be known): the balance may then end below
     * zero by that much, and the key's next request is refused until it is topped up. A failure is
     * logged, never silent.
     */
    const meter = ctx.meter ?? new Meter();
    const settle = async (charge: number) => {
      meter.credits = charge;
      const refund = reserved - charge;
      if (!metered || refund === 0) return;
      try {
        await store.addCredits(keyId, refund);
      } catch (err) {
        ctx.log.error(`credits not settled for ${keyId}: ${refund} of ${reserved} reserved not given back (${(err as Error).message})`);
      }
    };
    /** The tokens and units really used: the model's own count where it gave one, else a count of what it said. */
    const used = (reported?: TokenUsage): TokenUsage => {
      const g = meter.generation;
      const engine = g?.usage ?? (g?.started ? { promptTokens: 0, completionTokens: 0 } : undefined);
      let promptTokens = engine?.promptTokens || (g?.started ? count(g.prompt) : 0);
      let completionTokens = engine && (engine.completionTokens > 0 || !g?.text) ? engine.completionTokens : g?.text ? count(g.text) : 0;
      if (!g && reported) ({ promptTokens, completionTokens } = reported); // an engine-less stage answered with usage
      return {
        promptTokens: promptTokens + meter.taskTokens.promptTokens,
        completionTokens: completionTokens + meter.taskTokens.completionTokens,
        taskUnits: { ...meter.units },
      };
    };
    const bill = async (reported?: TokenUsage): Promise<TokenUsage> => {
      const usage = used(reported);
      const credits = keyId === 'env' ? 0 : priceOf(options.prices, usage);
      if (limits.tpm !== null) await chargeTokens(store, keyId, limits.tpm, usage.completionTokens + usage.promptTokens - promptTokens, now(), ctx);
      await settle(credits);
      return { ...usage, credits };
    };
    let answer: Completion;
    try {
      answer = await next({ ...ctx, meter });
    } catch (err) {
      await bill(); // refused or failed before its answer began: the tasks that ran are paid
      throw err;
    }
    // A cached answer costs nothing however it ends, whatever a later stage metered on the way
    // (the semantic cache drops an answer it started before its hit was known).
    const onDone = async (usage: TokenUsage): Promise<TokenUsage> => {
      if (answer.cached) {
        await settle(0);
        return { ...usage, credits: 0 };
      }
      return bill(usage);
    };
    const onCut = async () => void (answer.cached ? await settle(0) : await bill());
    return { ...answer, headers: { ...answer.headers, ...headers }, events: settled(answer.events, onDone, onCut) };
  };
}

/**
 * The most a request can use, known before any work: its prompt, its max tokens, and what its
 * tasks can read from its attachments (read once, here, as any later stage would).
 */
async function mostUsed(ctx: RequestContext, promptTokens: number, maxTokens: number, bounds: WorkBounds): Promise<TokenUsage> {
  const task = ctx.directives.task as TaskName | undefined;
  const tasks = task !== undefined ? [task] : ctx.flags.bypassMoa ? [] : MOA_TASKS;
  const attachments = tasks.some((t) => t !== 'web_search' && t !== 'scraper' && t !== 'translate') ? await ctx.attachments() : [];
  const text = ctx.body.messages.filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : '')).join('');
  const units = addUnits({}, boundUnits(tasks, attachments, text, bounds));
  if (task !== undefined) {
    // A task answers without the model; only the scraper's extraction generates.
    const extraction = task === 'scraper' ? SCRAPER_EXTRACTION_MAX_TOKENS : 0;
    return { promptTokens: task === 'scraper' ? promptTokens + 2000 : 0, completionTokens: extraction, taskUnits: units };
  }
  return { promptTokens, completionTokens: maxTokens, taskUnits: units };
}

/**
 * Passes the events on, settling at `done` (before passing it on, with the usage billed) or, if it never comes, when the
 * events end, fail or are closed, whichever is first, and only once. A plain iterator, not a
 * generator: a generator closed before its first read never runs its `finally`, and its
 * reservation would stay held (a shutdown, or a caller gone, can close the answer that early).
 */
function settled(events: AsyncIterable<GenerationEvent>, onDone: (usage: TokenUsage) => Promise<TokenUsage>,
  onCut: () => Promise<void>): AsyncIterableIterator<GenerationEvent> {
  let source: AsyncIterator<GenerationEvent> | undefined;
  let ended = false;
  let settlement: Promise<void> | undefined;
  const settle = (how: () => Promise<void>) => (settlement ??= how());
  const finished = { done: true, value: undefined } as const;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    // `then` rather than an async function awaiting the source: this runs on every event.
    next() {
      if (ended) return Promise.resolve(finished);
      source ??= events[Symbol.asyncIterator]();
      return source.next().then((result): IteratorResult<GenerationEvent> | Promise<IteratorResult<GenerationEvent>> => {
        if (result.done) {
          ended = true;
          return settle(onCut).then(() => finished); // nothing to do when `done` came: settled once
        }
        const event = result.value;
        if (event.type !== 'done') return result;
        let billed: TokenUsage = event.usage;
        return settle(async () => void (billed = await onDone(event.usage))).then(() => ({ done: false, value: { ...event, usage: billed } }));
      }, async (err: unknown) => {
        ended = true;
        await settle(onCut);
        throw err;
      });
    },
    async return() {
      ended = true;
      try {
        await source?.return?.();
      } finally {
        await settle(onCut);
      }
      return finished;
    },
  };
}

function estimatePromptTokens(request: GenerationRequest, countTokens?: (text: string) => number): number {
  const text = promptText(request);
  const tokens = countTokens ? countTokens(text) : Math.ceil(Buffer.byteLength(text) / 3);
  return tokens + TOKENS_PER_MESSAGE * request.messages.length;
}

/** Admits the request against its key's limits, or throws 429; answers the `x-ratelimit-*` headers. */
async function admit(store: Store, keyId: string, limits: { rpm: number | null; tpm: number | null }, promptTokens: number,
  maxTokens: number | undefined, nowMs: number): Promise<Record<string, string>> {
  if (limits.tpm !== null && promptTokens + (maxTokens ?? 0) > limits.tpm) {
    // More than a minute's tokens: no wait would let it through, so waiting is not the answer.
    throw invalidRequest(`This request needs ${promptTokens} prompt tokens${maxTokens ? ` and up to ${maxTokens} completion tokens` : ''}, more than this key's limit of ${limits.tpm} tokens per minute. Send a shorter prompt or a smaller max_tokens.`,
      'tokens_over_rate_limit', 'messages');
  }
  const requests = limits.rpm === null ? undefined : await store.rateLimit(`rpm:${keyId}`, limits.rpm, 1, nowMs);
  const tokens = limits.tpm === null || requests?.allowed === false
    ? undefined
    : await store.rateLimit(`tpm:${keyId}`, limits.tpm, promptTokens, nowMs);
  const headers = { ...rateHeaders('requests', requests), ...rateHeaders('tokens', tokens) };
  const refused = [requests, tokens].find((d) => d && !d.allowed);
  if (refused) {
    const which = refused === requests ? `${limits.rpm} requests` : `${limits.tpm} tokens`;
    const seconds = Math.max(1, Math.ceil(refused.retryAfterMs / 1000));
    throw rateLimited(`Rate limit of ${which} per minute reached for this key; retry in ${seconds} s.`, seconds, headers);
  }
  return headers;
}

/** The completion's tokens count against the tokens per minute once generated, over the limit or not. */
async function chargeTokens(store: Store, keyId: string, tpm: number, tokens: number, nowMs: number, ctx: RequestContext): Promise<void> {
  if (tokens <= 0) return;
  try {
    await store.chargeRate(`tpm:${keyId}`, tpm, tokens, nowMs);
  } catch (err) {
    ctx.log.error(`tokens not counted for ${keyId}: ${tokens} (${(err as Error).message})`);
  }
}

function rateHeaders(kind: 'requests' | 'tokens', decision: RateDecision | undefined): Record<string, string> {
  if (!decision) return {};
  return {
    [`x-ratelimit-limit-${kind}`]: String(decision.limit),
    [`x-ratelimit-remaining-${kind}`]: String(decision.remaining),
    [`x-ratelimit-reset-${kind}`]: duration(decision.resetMs),
  };
}

/** A duration as the clients of these headers read it: `1s`, `6m0s`, `250ms`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const seconds = Math.ceil(ms / 1000);
  return seconds < 60 ? `${seconds}s` : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}
