import type { Request, RequestHandler } from 'express';
import { toChunks } from '../chat/chunks.ts';
import { readDirectives } from '../chat/directives.ts';
import { foldEvents, toCompletionResponse } from '../chat/fold.ts';
import { lastUserText, routeAttachments } from '../chat/moa-router.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import { runTaskMode } from '../chat/task-mode.ts';
import type { Engine, GenerationEvent } from '../engines/engine.ts';
import { writeEventStream } from '../http/sse.ts';
import { type AttachmentLimits, resolveAttachments } from '../inputs/attachments.ts';
import type { TaskRegistry } from '../tasks/registry.ts';
import type { PrecontextEntry } from '../tasks/task.ts';
import type { ChatCompletionRequest } from './types.ts';

export interface ChatCompletionDeps {
  engine: Engine;
  tasks: TaskRegistry;
  attachmentLimits: AttachmentLimits;
  newCompletionId: () => string;
  log: Pick<Console, 'error'>;
}

/** A boolean header; the contract validator has already turned a valid one into a boolean. */
const flag = (req: Request, name: string) => String(req.headers[name] as unknown).toLowerCase() === 'true';

/** Handler for operation `createChatCompletion`; the body was validated against the contract. */
export function createChatCompletionHandler(deps: ChatCompletionDeps): RequestHandler {
  return async function createChatCompletion(req, res) {
    const body = req.body as ChatCompletionRequest;
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort(new Error('client disconnected'));
    });
    const generation = normalizeRequest(body, abort.signal);
    const meta = { id: deps.newCompletionId(), created: Math.floor(Date.now() / 1000), model: body.model };
    try {
      const { events, precontext } = await prepare(body, generation, flag(req, 'x-service-bypass-moa'), deps);
      if (body.stream) {
        const shown = flag(req, 'x-show-additional-info') ? precontext : [];
        const chunks = toChunks(meta, events, { includeUsage: body.stream_options?.include_usage === true, precontext: shown });
        await writeEventStream(req, res, chunks, abort, deps.log);
        return;
      }
      const folded = await foldEvents(events);
      res.json(toCompletionResponse(meta, folded, generation.reasoningEffort !== undefined, precontext));
    } catch (err) {
      if (abort.signal.aborted) return; // the client left: nobody to answer, nothing to log
      throw err;
    }
  };
}

/** Task mode, or the MoA layer and then the model: either way one event stream and its precontext. */
async function prepare(
  body: ChatCompletionRequest,
  generation: ReturnType<typeof normalizeRequest>,
  bypassMoa: boolean,
  deps: ChatCompletionDeps,
): Promise<{ events: AsyncIterable<GenerationEvent>; precontext: PrecontextEntry[] }> {
  const { task, instructions } = readDirectives(body.messages);
  if (task !== undefined) return runTaskMode(task, instructions, body, generation, deps);
  if (bypassMoa) return { events: deps.engine.generate(generation), precontext: [] };
  const attachments = await resolveAttachments(body.messages, deps.attachmentLimits);
  if (attachments.length === 0) return { events: deps.engine.generate(generation), precontext: [] };
  const routed = await routeAttachments(attachments, generation.messages,
    { text: lastUserText(body.messages), instructions: '', output: generation.output, signal: generation.signal }, deps.tasks);
  return { events: deps.engine.generate({ ...generation, messages: routed.messages }), precontext: routed.precontext };
}
