import type { PrecontextEntry, Tool } from '../../contract/wire-types.ts';
import type { Engine } from '../../engines/engine.ts';
import { serviceUnavailable } from '../../errors/service-error.ts';
import { isImageCode, isTextCode, type GuardCode } from '../../guard/codes.ts';
import type { Checked, CheckedImage } from '../../guard/guard.ts';
import { beingRegions } from '../../guard/image/image-codes.ts';
import type { Attachment } from '../../inputs/attachments.ts';
import type { TaskRegistry } from '../../tasks/registry.ts';
import { withoutDirectives } from '../directives.ts';
import { textOf } from '../normalize-request.ts';
import type { RequestContext } from '../request-context.ts';
import { routedAttachments } from './moa-router.ts';

export interface InputDeps {
  tasks: TaskRegistry;
  /** Whether the model is given the pictures themselves (a vision upstream), not only their MoA text. */
  engine: Pick<Engine, 'readsImages'>;
}

/**
 * Everything of the request a model reads, as texts to check: a guard that reads only the user's
 * turns is walked around by putting the request elsewhere (an earlier assistant turn followed by
 * "continue", a tool result, a tool's description). Each message of every role (system text
 * without its directives), its `name`, the tool calls it holds; each tool's name, description and
 * schema; the response format's schema; and the text read from the attachments: the MoA layer's,
 * or, when that layer is bypassed and the model sees the pictures, their OCR (not in task mode).
 */
export async function inputTexts(ctx: RequestContext, deps: InputDeps): Promise<Checked[]> {
  const texts: Checked[] = [];
  ctx.body.messages.forEach((m, i) => {
    const text = textOf(m.content);
    texts.push({ source: `messages[${i}]`, text: m.role === 'system' || m.role === 'developer' ? withoutDirectives(text) : text });
    if (m.name) texts.push({ source: `messages[${i}].name`, text: m.name });
    m.tool_calls?.forEach((call, k) => texts.push({ source: `messages[${i}].tool_calls[${k}]`, text: `${call.function.name}\n${call.function.arguments}` }));
  });
  ctx.body.tools?.forEach((tool, i) => texts.push({ source: `tools[${i}]`, text: toolText(tool) }));
  const format = ctx.body.response_format;
  if (format?.type === 'json_schema') texts.push({ source: 'response_format', text: [format.json_schema.name, ...schemaTexts(format.json_schema.schema)].join('\n') });

  // In task mode no model reads the attachments' MoA text (the MoA stage comes after the task):
  // the task's result is its answer, checked by the output check; routing them here too would run,
  // and bill, the reading tasks a second time.
  if (ctx.directives.task !== undefined) return texts;
  if (!ctx.flags.bypassMoa) {
    const routed = await routedAttachments(ctx, deps.tasks);
    if (routed?.context) texts.push({ source: 'attachments', text: routed.context });
  } else if (deps.engine.readsImages && ctx.directives.guard?.some(isTextCode)) {
    const read = await textInPictures(ctx, deps.tasks);
    if (read) texts.push({ source: 'attachments', text: read });
  }
  return texts;
}

/** A tool as the model is shown it: its name, its description, and its parameters' schema. */
function toolText(tool: Tool): string {
  const { name, description, parameters } = tool.function;
  return [name, description ?? '', ...schemaTexts(parameters ?? {})].filter(Boolean).join('\n');
}

/** Schema keywords whose string values are the schema's machinery, not words a model reads as instructions. */
const MACHINERY = new Set(['type', 'format', '$ref', '$schema', '$id', '$anchor', 'required']);

/** The words of a JSON Schema: property names, descriptions, titles, enum values, examples… */
function schemaTexts(schema: unknown, key = ''): string[] {
  if (typeof schema === 'string') return MACHINERY.has(key) ? [] : [schema];
  if (Array.isArray(schema)) return schema.flatMap((item) => schemaTexts(item, key));
  if (schema === null || typeof schema !== 'object') return [];
  return Object.entries(schema).flatMap(([k, v]) => [
    ...(k === 'properties' && v !== null && typeof v === 'object' ? Object.keys(v) : []),
    ...schemaTexts(v, k),
  ]);
}

/**
 * The text in the pictures a vision model is given past the MoA layer, read by OCR for the check
 * only (the guard's own work, not billed). Without OCR it cannot be checked: refused, never passed.
 */
async function textInPictures(ctx: RequestContext, tasks: TaskRegistry): Promise<string> {
  const images = (await ctx.attachments()).filter((a) => a.kind === 'image');
  if (images.length === 0) return '';
  if (!tasks.has('ocr')) {
    throw serviceUnavailable('This deployment cannot read the text in pictures (no OCR), so <guard> cannot check what the model would see. Send the request without x-service-bypass-moa, or without the pictures.', 'guard_unavailable');
  }
  const entry = await tasks.get('ocr').run({ attachments: images, text: '', instructions: '', output: ctx.generation.output, signal: ctx.signal, caller: ctx.caller.keyId });
  return entry.name === 'ocr' ? entry.result.text : '';
}

/**
 * The pictures the input check reads for the image codes, each with the people and animals in it
 * (for gore): found by the MoA layer's object detection when it ran, else by that task here.
 */
export async function inputImages(ctx: RequestContext, tasks: TaskRegistry, codes: GuardCode[]): Promise<CheckedImage[]> {
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
  const moaRuns = !ctx.flags.bypassMoa && ctx.directives.task === undefined; // else its detection is not run for the check
  const routed = moaRuns ? await routedAttachments(ctx, tasks) : undefined;
  let entry: PrecontextEntry | undefined = routed?.precontext.find((e) => e.name === 'object_detection');
  if (!entry && tasks.has('object_detection')) {
    entry = await tasks.get('object_detection').run({ attachments: images, text: '', instructions: '', output: ctx.generation.output, signal: ctx.signal, caller: ctx.caller.keyId });
  }
  return entry?.name === 'object_detection' ? entry.result.images : undefined;
}
