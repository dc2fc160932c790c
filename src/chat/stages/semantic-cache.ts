import { createHash, randomUUID } from 'node:crypto';
import { type CacheScope, cacheKeyOf, semanticKeyOf } from '../cache-key.ts';
import { type GenerationEvent, type GenerationRequest, promptText } from '../../engines/engine.ts';
import { EventFold, type FoldedGeneration, replayEvents } from '../../engines/fold-events.ts';
import { tapEvents } from '../../engines/tap-events.ts';
import type { SemanticEntry, Store } from '../../store/store.ts';
import type { PrecontextEntry } from '../../tasks/task.ts';
import type { Completion, Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';
import type { Combination } from '../semantic/budget-judge.ts';
import { type Embedder, encodeVector, type Reading } from '../semantic/embedder.ts';
import { alignedNearest, budgetNearest, piecesKey } from '../semantic/nearest.ts';
import { PIECE_WIDTH } from '../semantic/token-alignment.ts';
import { fixedTerms, wordsApart, wordPrints } from '../semantic/candidate-filter.ts';
import { sameAnswer } from '../semantic/same-answer.ts';
import { entryAllows, estimatedError } from '../semantic/verification.ts';
import { type AnswerAhead, answerAhead } from './answer-ahead.ts';
import { isInputVerdict } from './guard.ts';
import { type CachedAnswer, verified } from './verified-cache.ts';

export interface SemanticCacheOptions {
  scope: CacheScope;
  ttlSeconds: number;
  /** δ (`CACHE_MAX_ERROR`): the largest estimated probability of a wrong answer a hit may carry. */
  maxError: number;
  /** `CACHE_VERIFY_SHARE`: the share of would-be hits generated fresh and compared, so the estimate stays honest. */
  verifyShare: number;
  /**
   * `CACHE_JUDGE=budget`: the budget judge's combination (the embedder then reads pairs too). It
   * replaces the candidate filter and the alignment: the filter's verdicts are two of its features.
   */
  judge?: Combination;
  /** Tests pass a scripted one. */
  random?: () => number;
}

/** A semantic key's entries are scanned one by one: this bounds the scan. */
export const MAX_ENTRIES = 256;
/** The verifications an entry keeps (its last ones). */
const OWN_KEPT = 64;
/** The verifications a scope's pool keeps (its last ones). */
const POOL_KEPT = 4096;
/**
 * The longest last turn the layer compares or stores, in word pieces (about 35 words; a question
 * is far shorter): aligning two texts costs the product of their lengths on the event loop, 1 ms
 * for two of 48 pieces here and 29 ms for two of 256, so a long prompt is an exact-cache request.
 */
export const MAX_PIECES = 48;
const comparable = (reading: Reading) => reading.pieces.length <= MAX_PIECES * PIECE_WIDTH;
/**
 * What the similarities are: the word-piece alignment since 26 November (the sentence vectors'
 * cosine before), or the budget judge's probability. It names the semantic keys and the pools, so
 * state learned on another scale is never read as this one.
 */
const scaleOf = (options: SemanticCacheOptions) => (options.judge ? 'budget' : 'aligned');

/**
 * The semantic layer, behind the exact one: a deterministic request whose last user turn means
 * what a cached one meant, everything else equal (the semantic key), is answered with that
 * answer while its entry allows it and the estimated error of its answer there is at most δ
 * (verification.ts; `vcache: true`). Every fresh answer that has a cached neighbour is compared
 * with it and the outcome kept, shared through the store: by the entry, and by the scope's pool
 * (the prior of every entry's estimate); a fresh answer unlike its neighbour's, or with none,
 * becomes an entry (its answer is the exact cache's). `x-service-bypass-cache` skips it; ZDR may
 * read and writes nothing (no vector, no verification).
 */
export function semanticCache(store: Store, embedder: Embedder, options: SemanticCacheOptions): Stage {
  const random = options.random ?? Math.random;
  const scale = scaleOf(options);
  const nearestOf = options.judge ? budgetNearest(store, embedder, options.judge) : alignedNearest(store);
  return async function semanticCache(ctx, next) {
    if (ctx.flags.bypassCache || !deterministic(ctx.generation)) return next(ctx);
    const found = await semanticKeyOf(ctx, options.scope);
    if (!found) return next(ctx);
    // The candidate filter, before any similarity (without a judge that reads its verdicts): only
    // texts with the same fixed terms (numbers, units, names, extremes, operators, negations) share
    // a key, so a near miss that changes one is never compared, however near its vector; nor is an
    // entry a few words apart (candidate-filter.ts).
    const filtered = !options.judge;
    const semantic = { ...found, key: createHash('sha256').update(`${scale}\n${found.key}${filtered ? `\n${fixedTerms(found.text)}` : ''}`).digest('hex') };
    const words = wordPrints(semantic.text);
    const candidates = (await store.semanticEntries(semantic.key)).filter((entry) => !(filtered && entry.words && wordsApart(entry.words, words)));
    // A cache that cannot embed or judge is a miss, never a failed request: the exact layer still ran.
    const skipped = (err: unknown) => {
      ctx.log.warn(`semantic cache skipped: ${(err as Error).message}`);
      return undefined;
    };
    const embed = () => embedder.embed(semantic.text, ctx.caller.keyId).catch(skipped);
    const addEntry = async (reading: Reading) => {
      if (!comparable(reading)) return;
      const entry: SemanticEntry = { id: randomUUID(), vector: encodeVector(reading.vector), answerKey: await cacheKeyOf(ctx, options.scope), words,
        ...(options.judge ? { text: semantic.text } : {}) };
      // The word pieces are read only for the few nearest entries: they live apart from the entry list.
      await store.cacheSet(piecesKey(entry.id), encodeVector(reading.pieces), options.ttlSeconds);
      await store.semanticAdd(semantic.key, entry, MAX_ENTRIES, options.ttlSeconds);
    };
    if (candidates.length === 0) {
      // Nothing could be compared, so this is a miss without any embedding: the one the new entry
      // needs runs beside the generation and is awaited only to store it (ZDR stores none).
      if (ctx.flags.zdr) return next(ctx);
      const later = embed();
      const answer = await next(ctx);
      const learn = async () => {
        const reading = await later;
        if (reading) await addEntry(reading);
      };
      return { ...answer, events: whenVerified(answer, ctx, learn) };
    }
    // There are candidates, so the prompt is embedded and compared before a hit can be known: the
    // answer starts beside that (a miss waits for the slower of the two, not for both in turn),
    // unless the request reads attachments or runs a task, whose work is paid once begun, or its
    // prompt is long (startsAhead).
    const ahead = (await startsAhead(ctx)) ? answerAhead(ctx, next) : undefined;
    const fresh = () => ahead?.take() ?? next(ctx);
    const reading = await embed();
    if (!reading || !comparable(reading)) return fresh();
    const nearest = await nearestOf({ text: semantic.text, reading, caller: ctx.caller.keyId }, candidates).catch(skipped);
    const pool = `pool:${scale}:${options.scope === 'key' ? ctx.caller.keyId : 'global'}`;
    const own = nearest && `${semantic.key}:${nearest.entry.id}`;

    let neighbour: CachedAnswer | undefined;
    if (nearest && own) {
      const raw = await store.cacheGet(nearest.entry.answerKey);
      neighbour = raw === undefined ? undefined : (JSON.parse(raw) as CachedAnswer);
      if (neighbour) {
        const [ownSeen, poolSeen] = await store.observations([own, pool]);
        const allowed = entryAllows(ownSeen!, nearest.s) && estimatedError(ownSeen!, poolSeen!, nearest.s, nearest.entry.id) <= options.maxError;
        if (allowed && random() >= options.verifyShare) {
          const hit = await hitFor(ctx, neighbour, ahead);
          if (hit) return hit;
        }
      }
    }

    const answer = await fresh();
    if (ctx.flags.zdr) return answer;
    const learn = async (fresh: FoldedGeneration) => {
      const ttl = options.ttlSeconds;
      if (neighbour && nearest && own) {
        const observation = { s: nearest.s, ok: sameAnswer(fresh, neighbour.folded) };
        await Promise.all([
          store.observe(own, observation, OWN_KEPT, ttl),
          store.observe(pool, { ...observation, entry: nearest.entry.id }, POOL_KEPT, ttl),
        ]);
        if (observation.ok) return; // the neighbour stands for this prompt too, and has learned from it
      }
      await addEntry(reading);
    };
    return { ...answer, events: whenVerified(answer, ctx, learn) };
  };
}

/**
 * The cached answer for a would-be hit. A guarded request's own text must pass its input check
 * first, as on a miss (the cached request's verdict was of another text): its answer started
 * ahead holds that verdict, as its later stages answer once the check is done. Blocked, it is
 * answered from there (`unsafe`, stored nowhere); passed, the cached answer comes with this
 * verdict in place of the cached request's. A guarded request not started ahead is no hit
 * (undefined: answered fresh, and its answer verifies the entry).
 */
async function hitFor(ctx: RequestContext, neighbour: CachedAnswer, ahead: AnswerAhead | undefined): Promise<Completion | undefined> {
  const hit = (precontext: PrecontextEntry[]): Completion => ({ events: replayEvents(neighbour.folded), precontext, cached: true });
  if (ctx.directives.guard === undefined) {
    ahead?.drop();
    return hit(neighbour.precontext);
  }
  const checked = await ahead?.answered().catch(() => undefined); // a failure is the fresh answer's to throw
  if (!checked) return undefined;
  if (checked.blocked?.()) return ahead!.take();
  ahead!.drop();
  return hit([...checked.precontext.filter(isInputVerdict), ...neighbour.precontext.filter((entry) => !isInputVerdict(entry))]);
}

/**
 * The longest prompt (its messages and tools, in UTF-8 bytes; about 1,000 tokens) whose answer starts
 * before the lookup has decided. A hit drops that answer unpaid, so a caller sending paraphrases
 * of a cached question gets the model's reading of it for free, as often as its rate limit allows:
 * this bounds that reading, and an engine that stops only between batches of the prompt stops
 * soon. A longer prompt's reading takes far longer than the lookup, so it would gain little.
 */
export const AHEAD_MAX_PROMPT_BYTES = 4096;

/** A short request the model alone answers: its work may start before the lookup has decided, and be dropped unpaid. */
async function startsAhead(ctx: RequestContext): Promise<boolean> {
  if (ctx.directives.task !== undefined) return false;
  return Buffer.byteLength(promptText(ctx.generation)) <= AHEAD_MAX_PROMPT_BYTES && (await ctx.attachments()).length === 0;
}

/** Only answers that are the same every time can be compared by equality. */
const deterministic = (generation: GenerationRequest) => generation.temperature === 0 || generation.seed !== undefined;

/** Passes the events on; at `done`, before passing it, learns from the whole answer if it verifies. */
function whenVerified(answer: Completion, ctx: RequestContext, learn: (fresh: FoldedGeneration) => Promise<void>): AsyncIterableIterator<GenerationEvent> {
  const fold = new EventFold();
  return tapEvents(answer.events, {
    event(event) {
      const folded = fold.add(event);
      if (folded && !answer.blocked?.() && verified(folded, ctx)) {
        // A store that fails costs what would have been learned, never the answer.
        learn(folded).catch((err: unknown) => ctx.log.warn(`semantic cache store failed: ${(err as Error).message}`));
      }
    },
  });
}

