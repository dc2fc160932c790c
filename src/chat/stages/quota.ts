import type { GenerationEvent, GenerationRequest, TokenUsage } from '../../engines/engine.ts';
import { insufficientQuota, rateLimited } from '../../errors/service-error.ts';
import type { RateDecision, Store } from '../../store/store.ts';
import type { Completion, Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

export interface QuotaOptions {
  /** Credits per 1,000 prompt and completion tokens (`CREDITS_PER_1K_*`). */
  prices: { prompt: number; completion: number };
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

/**
 * Rate limits and credits, before any work. A key's requests and tokens per minute are admitted
 * by the store's GCRA (429 with `Retry-After` past them; every answer of a limited key carries the
 * `x-ratelimit-*` headers). Then the most the request can cost (its prompt and its max tokens) is
 * reserved from the key's balance in one atomic step (402 when the balance cannot cover it); when
 * the answer ends, the real cost is settled and the rest given back. A cache hit costs nothing; an
 * answer that never ends (an error, a client gone) costs its prompt only. The key of
 * `SERVICE_API_KEY` (id `env`) has no balance.
 */
export function quota(store: Store, options: QuotaOptions): Stage {
  const now = options.now ?? Date.now;
  const creditsFor = (promptTokens: number, completionTokens: number) =>
    Math.ceil((promptTokens * options.prices.prompt + completionTokens * options.prices.completion) / 1000);

  return async function quota(ctx, next) {
    const { keyId } = ctx.caller;
    const promptTokens = estimatePromptTokens(ctx.generation, options.countTokens);
    const limits = { rpm: ctx.caller.rpm ?? options.defaults.rpm, tpm: ctx.caller.tpm ?? options.defaults.tpm };
    const headers = await admit(store, keyId, limits, promptTokens, now());

    const reserved = creditsFor(promptTokens, ctx.generation.maxTokens ?? CONTRACT_MAX_TOKENS);
    const metered = keyId !== 'env' && reserved > 0;
    if (metered) {
      const reservation = await store.reserveCredits(keyId, reserved);
      if (!reservation.ok) {
        throw insufficientQuota(`This request may cost up to ${reserved} credits (its prompt and max_tokens ${ctx.generation.maxTokens ?? CONTRACT_MAX_TOKENS}); the key's balance is ${reservation.balance}. Top it up, or send a smaller max_tokens.`);
      }
    }
    /** Gives back what was reserved beyond `charge`; a failure is logged, never silent. */
    const settle = async (charge: number) => {
      const refund = reserved - Math.min(charge, reserved);
      if (!metered || refund === 0) return;
      try {
        await store.addCredits(keyId, refund);
      } catch (err) {
        ctx.log.error(`[${ctx.requestId}] credits not settled for ${keyId}: ${refund} of ${reserved} reserved not given back (${(err as Error).message})`);
      }
    };
    let answer: Completion;
    try {
      answer = await next(ctx);
    } catch (err) {
      await settle(0); // refused before any generation: nothing to pay
      throw err;
    }
    const onDone = async (usage: TokenUsage) => {
      if (answer.cached) return settle(0);
      if (limits.tpm !== null) await chargeTokens(store, keyId, limits.tpm, usage.completionTokens, now(), ctx);
      return settle(creditsFor(usage.promptTokens, usage.completionTokens));
    };
    return { ...answer, headers: { ...answer.headers, ...headers }, events: settled(answer.events, onDone, () => settle(creditsFor(promptTokens, 0))) };
  };
}

/**
 * Passes the events on, settling at `done` (before passing it on) or, if it never comes, when the
 * events end, fail or are closed, whichever is first, and only once. A plain iterator, not a
 * generator: a generator closed before its first read never runs its `finally`, and its
 * reservation would stay held (a shutdown, or a caller gone, can close the answer that early).
 */
function settled(events: AsyncIterable<GenerationEvent>, onDone: (usage: TokenUsage) => Promise<void>,
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
    async next() {
      if (ended) return finished;
      source ??= events[Symbol.asyncIterator]();
      let result: IteratorResult<GenerationEvent>;
      try {
        result = await source.next();
      } catch (err) {
        ended = true;
        await settle(onCut);
        throw err;
      }
      if (result.done) {
        ended = true;
        await settle(onCut); // nothing to do when `done` came: settled once
        return finished;
      }
      if (result.value.type === 'done') await settle(() => onDone((result.value as { usage: TokenUsage }).usage));
      return result;
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
  const text = [
    ...request.messages.map((m) => m.content),
    ...request.tools.map((t) => JSON.stringify({ name: t.name, description: t.description, parameters: t.parameters.schema })),
  ].join('\n');
  const tokens = countTokens ? countTokens(text) : Math.ceil(Buffer.byteLength(text) / 3);
  return tokens + TOKENS_PER_MESSAGE * request.messages.length;
}

/** Admits the request against its key's limits, or throws 429; answers the `x-ratelimit-*` headers. */
async function admit(store: Store, keyId: string, limits: { rpm: number | null; tpm: number | null }, promptTokens: number,
  nowMs: number): Promise<Record<string, string>> {
  const requests = limits.rpm === null ? undefined : await store.rateLimit(`rpm:${keyId}`, limits.rpm, 1, nowMs);
  const tokens = limits.tpm === null || requests?.allowed === false
    ? undefined
    : await store.rateLimit(`tpm:${keyId}`, limits.tpm, Math.min(promptTokens, limits.tpm), nowMs);
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
    ctx.log.error(`[${ctx.requestId}] tokens not counted for ${keyId}: ${tokens} (${(err as Error).message})`);
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
