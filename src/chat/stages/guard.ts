import type { PrecontextEntry } from '../../contract/wire-types.ts';
import { guardUnavailable } from '../../errors/service-error.ts';
import { textAnswer } from '../../engines/fold-events.ts';
import { isImageCode, type GuardCode } from '../../guard/codes.ts';
import { type CheckedImage, type Guard, unsafeAnswer } from '../../guard/guard.ts';
import { beingRegions } from '../../guard/image/image-codes.ts';
import { checkWholeAnswer, type OutputCheck, releaseChecked } from '../../guard/output-guard.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import type { TaskRegistry } from '../../tasks/registry.ts';
import { textOf } from '../normalize-request.ts';
import type { Completion, Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';
import { routedAttachments } from './moa-router.ts';

export interface GuardDeps {
  /** Absent where the deployment has none: a guarded request then gets a 503, never a pass. */
  guard?: Guard;
  /** The internal tasks, whose reading of the attachments (OCR, transcripts) is checked too. */
  tasks: TaskRegistry;
}

/**
 * What the input check reads: each user message's text, and the text the MoA layer reads from
 * the attachments (the same routing the MoA stage then uses, done once).
 */
async function inputTexts(ctx: RequestContext, tasks: TaskRegistry) {
  const texts = ctx.body.messages.flatMap((m, i) => (m.role === 'user' ? [{ source: `messages[${i}]`, text: textOf(m.content) }] : []));
  const routed = ctx.flags.bypassMoa ? undefined : await routedAttachments(ctx, tasks);
  if (routed?.context) texts.push({ source: 'attachments', text: routed.context });
  return texts;
}

/**
 * The pictures the input check reads for the image codes, each with the people and animals in it
 * (for gore): found by the MoA layer's object detection when it ran, else by that task here.
 */
async function inputImages(ctx: RequestContext, tasks: TaskRegistry, codes: GuardCode[]): Promise<CheckedImage[]> {
  if (!codes.some(isImageCode)) return [];
  const images = (await ctx.attachments()).filter((a) => a.kind === 'image');
  if (images.length === 0) return [];
  const detected = codes.includes('S1_IMAGE') ? await detections(ctx, tasks, images) : undefined;
  return images.map((a) => {
    const objects = detected?.find((d) => d.source === a.param && d.time_seconds === a.frame?.seconds)?.objects;
    // A video's frames share its param; the media-fragment suffix tells them apart.
    const source = a.frame ? `${a.param}#t=${a.frame.seconds}` : a.param;
    return { source, image: a.bytes, beings: objects && beingRegions(objects) };
  });
}

async function detections(ctx: RequestContext, tasks: TaskRegistry, images: Attachment[]) {
  const routed = ctx.flags.bypassMoa ? undefined : await routedAttachments(ctx, tasks);
  let entry: PrecontextEntry | undefined = routed?.precontext.find((e) => e.name === 'object_detection');
  if (!entry && tasks.has('object_detection')) {
    entry = await tasks.get('object_detection').run({ attachments: images, text: '', instructions: '', output: ctx.generation.output, signal: ctx.signal, caller: ctx.caller.keyId });
  }
  return entry?.name === 'object_detection' ? entry.result.images : undefined;
}

/**
 * `<guard>CODES</guard>`: every user message's text, what the attachments say, and the pictures
 * (for the image codes) are checked before any generation, and a
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

    const [texts, pictures] = await Promise.all([inputTexts(ctx, deps.tasks), inputImages(ctx, deps.tasks, codes)]);
    const input = await guard.check('input', texts, codes, pictures, ctx.caller.keyId);
    const entry = (result: typeof input): PrecontextEntry => ({ name: 'guardrails', result });
    if (!input.safe) return { events: textAnswer(unsafeAnswer(input)), precontext: [entry(input)], blocked: true };

    const answer = await next(ctx);
    const completion: Completion = { ...answer, precontext: [entry(input), ...answer.precontext] };
    const output: OutputCheck = {
      check: (items) => guard.check('output', items, codes, [], ctx.caller.keyId),
      onVerdict: (verdict) => {
        completion.precontext.push(entry(verdict));
        if (!verdict.safe) completion.blocked = true;
      },
    };
    completion.events = ctx.generation.stream ? releaseChecked(answer.events, output) : checkWholeAnswer(answer.events, output);
    return completion;
  };
}
