import type { Request, RequestHandler, Response } from 'express';
import { toChunks } from './chunks.ts';
import { toCompletionResponse } from './completion-response.ts';
import type { Completion, Next } from '../chat/pipeline.ts';
import type { Logger } from '../logging.ts';
import { foldEvents } from '../engines/fold-events.ts';
import { Drain, untilShutdown } from '../http/drain.ts';
import { outcomeOf, type RequestEnd } from '../http/request-outcome.ts';
import { writeEventStream } from '../http/sse.ts';
import type { AttachmentLimits } from '../inputs/attachments.ts';
import type { SchemaLimits } from '../engines/schema-budget.ts';
import { observeEvents, recordCompletion } from './record-outcome.ts';
import { createRequestContext, type RequestContext } from '../chat/request-context.ts';
import type { ChatCompletionRequest } from '../contract/wire-types.ts';
import type { Caller } from '../keys/caller.ts';
import { logFor } from '../logging.ts';
import { requestOf, type RequestScope } from '../request-scope.ts';

export interface ChatCompletionDeps {
  /** The completion pipeline (chat/create-pipeline.ts). */
  complete: Next;
  attachmentLimits: AttachmentLimits;
  schemaLimits?: SchemaLimits;
  drain: Drain;
  newCompletionId: () => string;
  log: Logger;
  /** The engine's short name, for the request log and metrics. */
  engineKind: string;
  /** Hears each request start and wholly end (the metrics' `service_requests_open`). */
  openRequests?: { opened(): void; closed(): void };
  /** Hears the credits each request was charged, once settled, and how it ended (the metrics' `service_credits_charged`). */
  charged?: (credits: number, ended: RequestEnd) => void;
}

/**
 * Handler for operation `createChatCompletion`; the body was validated against the contract.
 * One pipeline makes the completion's event stream; a JSON answer is its fold and a stream its
 * translation into chunks, so the two modes cannot disagree.
 */
export function createChatCompletionHandler(deps: ChatCompletionDeps): RequestHandler {
  return async function createChatCompletion(req, res) {
    deps.openRequests?.opened();
    const made: { completion?: Completion; ctx?: RequestContext } = {};
    let threw = false;
    try {
      await answer(req, res, made);
    } catch (err) {
      threw = true;
      throw err;
    } finally {
      // Whatever happened on the way, the answer's events are closed: an event stream never read
      // (or never started) still settles its reservation and releases what it holds.
      await made.completion?.events[Symbol.asyncIterator]().return?.().catch(() => {});
      const credits = made.ctx?.meter?.credits;
      if (credits !== undefined) {
        const ended = made.ctx!.signal.aborted ? 'client_left' : threw || outcomeOf(res).error ? 'failed' : 'answered';
        deps.charged?.(credits, ended);
      }
      deps.openRequests?.closed();
    }
  };

  /** Makes the completion (kept in `made`) and writes it, as JSON or as a stream. */
  async function answer(req: Request, res: Response, made: { completion?: Completion; ctx?: RequestContext }): Promise<void> {
    const scope = requestOf(res);
    const ctx = (made.ctx = createRequestContext(requestInputOf(req, res, scope), { ...deps, log: logFor(deps.log, scope) }));
    const { body } = ctx;
    const outcome = outcomeOf(res);
    Object.assign(outcome, { keyId: ctx.caller.keyId, stream: body.stream === true, zdr: ctx.flags.zdr });
    const flight = deps.drain.track();
    res.on('close', flight.done);
    const meta = { id: deps.newCompletionId(), created: Math.floor(Date.now() / 1000), model: body.model };
    try {
      const completion = (made.completion = await deps.complete(ctx));
      const { precontext, cached, headers } = completion;
      recordCompletion(outcome, ctx, completion, deps.engineKind);
      const events = observeEvents(untilShutdown(completion.events, flight.signal), outcome, ctx, completion);
      res.set({ ...headers, 'x-service-cache': outcome.cache });
      if (body.stream) {
        const shown = ctx.flags.showAdditionalInfo ? precontext : [];
        const chunks = toChunks(meta, events, {
          includeUsage: body.stream_options?.include_usage === true, precontext: shown, reasoningDelta: ctx.flags.reasoningDelta,
        });
        await writeEventStream(req, res, chunks, ctx.signal, ctx.log);
        return;
      }
      const folded = await foldEvents(events);
      res.json(toCompletionResponse(meta, folded, ctx.generation.reasoningEffort !== undefined, precontext, cached));
    } catch (err) {
      if (ctx.signal.aborted) return; // the client left: nobody to answer, nothing to log
      throw err;
    }
  }
}

/**
 * The validated request as the pipeline's context takes it: its id and ZDR flag from the request
 * scope (read once, when it arrived), the caller put there by auth, and an abort signal that fires
 * when the client goes away before the answer is complete, streamed or not.
 */
function requestInputOf(req: Request, res: Response, scope: RequestScope | undefined) {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort(new Error('client disconnected'));
  });
  return {
    requestId: scope?.requestId ?? 'unknown',
    zdr: scope?.zdr ?? false,
    caller: res.locals.caller as Caller,
    headers: req.headers,
    body: req.body as ChatCompletionRequest,
    signal: abort.signal,
  };
}
