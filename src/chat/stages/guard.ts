import type { PrecontextEntry } from '../../contract/wire-types.ts';
import { guardUnavailable } from '../../errors/service-error.ts';
import { textAnswer } from '../../engines/fold-events.ts';
import { type Guard, unsafeAnswer } from '../../guard/guard.ts';
import { checkWholeAnswer, type OutputCheck, releaseChecked } from '../../guard/output-guard.ts';
import type { Completion, Stage } from '../pipeline.ts';
import { type InputDeps, inputImages, inputTexts } from './guard-inputs.ts';

/** Whether a precontext entry is a verdict of the input check (the guard's first entry). */
export const isInputVerdict = (entry: PrecontextEntry) => entry.name === 'guardrails' && (entry.result as { stage?: string }).stage === 'input';

export interface GuardDeps extends InputDeps {
  /** Absent where the deployment has none: a guarded request then gets a 503, never a pass. */
  guard?: Guard;
}

/**
 * `<guard>CODES</guard>`: every text the model would read (guard-inputs.ts) and the pictures (for
 * the image codes) are checked before any generation, and a
 * request that matches is answered `unsafe CODES` with nothing generated and nothing charged. The
 * answer (a model's or a task's) is checked too: whole before it is returned, or, streamed, a
 * sentence at a time before each is released. Each verdict joins the precontext; a blocked
 * answer is marked so that the verified cache never keeps it.
 */
export function guard(deps: GuardDeps): Stage {
  return async function guard(ctx, next) {
    const codes = ctx.directives.guard;
    if (codes === undefined) return next(ctx);
    if (!deps.guard) throw guardUnavailable('This deployment has no guard, so <guard> cannot be honoured.');
    const { guard } = deps;
    const requester = { keyId: ctx.caller.keyId, zdr: ctx.flags.zdr };

    const [texts, pictures] = await Promise.all([inputTexts(ctx, deps), inputImages(ctx, deps.tasks, codes)]);
    const input = await guard.check('input', texts, codes, pictures, requester);
    const entry = (result: typeof input): PrecontextEntry => ({ name: 'guardrails', result });
    if (!input.safe) return { events: textAnswer(unsafeAnswer(input)), precontext: [entry(input)], blocked: () => true };

    const answer = await next(ctx);
    // The later stages' entries are part of the answer (a task's result is its content): held
    // until the output check has passed it all, so a blocked answer's never reaches the caller,
    // in a stream either. The array is the one the handler writes from, so it is filled in place.
    const held = answer.precontext;
    let blocked = false;
    const completion: Completion = { ...answer, precontext: [entry(input)], blocked: () => blocked };
    const output: OutputCheck = {
      check: (items) => guard.check('output', items, codes, [], requester),
      onVerdict: (verdict) => {
        if (verdict.safe) completion.precontext.push(...held.splice(0));
        else blocked = true;
        completion.precontext.push(entry(verdict));
      },
    };
    completion.events = ctx.generation.stream ? releaseChecked(answer.events, output) : checkWholeAnswer(answer.events, output);
    return completion;
  };
}
