import type { EngineMessage } from '../../engines/engine.ts';
import type { Attachment, AttachmentKind } from '../../inputs/attachments.ts';
import type { TaskRegistry } from '../../tasks/registry.ts';
import type { PrecontextEntry, Task, TaskName, TaskInput } from '../../tasks/task.ts';
import { lastUserText } from '../normalize-request.ts';
import type { Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

/** Which internal tasks read which kind of attachment (those the deployment has). */
const TASKS_FOR: Record<AttachmentKind, TaskName[]> = {
  image: ['ocr', 'object_detection'],
  pdf: ['ocr'],
  document: ['ocr'],
  audio: ['speech_to_text'],
  text: [],
};

export interface MoaDeps {
  tasks: TaskRegistry;
}

/**
 * The MoA layer for ordinary chat (unless `x-service-bypass-moa`): attachments go through the
 * fitting internal tasks; their raw outputs join the precontext, and their text becomes context
 * the model reads with the last user message.
 */
export function moaRouter(deps: MoaDeps): Stage {
  return async function moaRouter(ctx, next) {
    if (ctx.flags.bypassMoa) return next(ctx);
    const routed = await routedAttachments(ctx, deps.tasks);
    if (routed === undefined) return next(ctx);
    const answer = await next({ ...ctx, generation: { ...ctx.generation, messages: routed.messages } });
    return { ...answer, precontext: [...routed.precontext, ...answer.precontext] };
  };
}

interface Routed {
  precontext: PrecontextEntry[];
  messages: EngineMessage[];
  /** The text the tasks read from the attachments, as the model is given it. */
  context: string;
}

/** One routing per request, whichever stage asks first (the guard reads its text too). */
const routedOf = new WeakMap<RequestContext['attachments'], Promise<Routed | undefined>>();

/** The request's attachments through the internal tasks (undefined: none), done once per request. */
export function routedAttachments(ctx: RequestContext, tasks: TaskRegistry): Promise<Routed | undefined> {
  let routed = routedOf.get(ctx.attachments);
  if (!routed) {
    routed = ctx.attachments().then((attachments) => {
      if (attachments.length === 0) return undefined;
      const input = { text: lastUserText(ctx.body.messages), instructions: '', output: ctx.generation.output, signal: ctx.signal, caller: ctx.caller.keyId };
      // Each task's work is paid as in task mode, whether the answer is generated or the guard blocks it.
      return routeAttachments(attachments, ctx.generation.messages, input, tasks, ctx.meter && ((task, taskInput) => ctx.meter!.run(task, taskInput)));
    });
    routedOf.set(ctx.attachments, routed);
  }
  return routed;
}

/**
 * Runs the internal tasks on the attachments; text files are given to the model as they are.
 */
export async function routeAttachments(
  attachments: Attachment[],
  messages: EngineMessage[],
  input: Omit<TaskInput, 'attachments'>,
  tasks: TaskRegistry,
  run: (task: Task, input: TaskInput) => Promise<PrecontextEntry> = (task, taskInput) => task.run(taskInput),
): Promise<Routed> {
  const precontext: PrecontextEntry[] = [];
  for (const name of new Set(attachments.flatMap((a) => TASKS_FOR[a.kind]))) {
    if (!tasks.has(name)) continue;
    const readable = attachments.filter((a) => TASKS_FOR[a.kind].includes(name));
    const entry = await run(tasks.get(name), { ...input, attachments: readable });
    precontext.push(entry);
  }
  const texts = attachments.filter((a) => a.kind === 'text').map((a) => `${a.filename ?? a.param}:\n${a.bytes.toString('utf8')}`);
  const context = [...precontext.map(describe), ...texts].filter(Boolean).join('\n\n');
  return { precontext, messages: context ? withContext(messages, context) : messages, context };
}

function describe(entry: PrecontextEntry): string {
  switch (entry.name) {
    case 'ocr':
      return `Text read from the attachments (OCR):\n${entry.result.text}`;
    case 'object_detection':
      return `Objects seen in the images: ${entry.result.images.flatMap((i) => i.objects.map((o) => `${o.label} (${o.score.toFixed(2)})`)).join(', ') || 'none'}`;
    case 'stt':
      return `Transcript of the audio:\n${entry.result.text}`;
    default:
      return '';
  }
}

function withContext(messages: EngineMessage[], context: string): EngineMessage[] {
  const at = messages.map((m) => m.role).lastIndexOf('user');
  if (at < 0) return [...messages, { role: 'user', content: context }];
  return messages.map((m, i) => (i === at ? { ...m, content: `${m.content}\n\n${context}` } : m));
}
