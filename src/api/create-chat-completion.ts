import type { RequestHandler } from 'express';
import { toChunks } from '../chat/chunks.ts';
import { foldEvents, toCompletionResponse } from '../chat/fold.ts';
import { normalizeRequest } from '../chat/normalize-request.ts';
import type { Engine } from '../engines/engine.ts';
import { writeEventStream } from '../http/sse.ts';
import type { ChatCompletionRequest } from './types.ts';

export interface ChatCompletionDeps {
  engine: Engine;
  newCompletionId: () => string;
  log: Pick<Console, 'error'>;
}

/** Handler for operation `createChatCompletion`; the body was validated against the contract. */
export function createChatCompletionHandler(deps: ChatCompletionDeps): RequestHandler {
  return async function createChatCompletion(req, res) {
    const body = req.body as ChatCompletionRequest;
    const abort = new AbortController();
    const generation = normalizeRequest(body, abort.signal);
    const meta = { id: deps.newCompletionId(), created: Math.floor(Date.now() / 1000), model: body.model };
    const events = deps.engine.generate(generation);
    try {
      if (body.stream) {
        const chunks = toChunks(meta, events, { includeUsage: body.stream_options?.include_usage === true });
        await writeEventStream(req, res, chunks, abort, deps.log);
        return;
      }
      res.on('close', () => {
        if (!res.writableFinished) abort.abort(new Error('client disconnected'));
      });
      const folded = await foldEvents(events);
      res.json(toCompletionResponse(meta, folded, generation.reasoningEffort !== undefined));
    } catch (err) {
      if (abort.signal.aborted) return; // the client left: nobody to answer, nothing to log
      throw err;
    }
  };
}
