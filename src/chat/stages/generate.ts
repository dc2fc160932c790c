import type { Engine, EngineMessage } from '../../engines/engine.ts';
import type { Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

/** The model answers: the engine's event stream, as it comes. */
export function generate(engine: Engine): Stage {
  return async function generate(ctx) {
    const messages = engine.readsImages ? await withImages(ctx) : ctx.generation.messages;
    return { events: engine.generate({ ...ctx.generation, messages, signal: ctx.signal }), precontext: [] };
  };
}

/**
 * Each message's images, as data URLs of the bytes already fetched and checked, so a model that
 * sees pictures gets them and never fetches a caller's URL itself.
 */
async function withImages(ctx: RequestContext): Promise<EngineMessage[]> {
  const images = (await ctx.attachments()).filter((a) => a.kind === 'image');
  if (images.length === 0) return ctx.generation.messages;
  return ctx.generation.messages.map((message, i) => {
    const own = images.filter((a) => a.param.startsWith(`messages[${i}].`));
    return own.length ? { ...message, images: own.map((a) => `data:${a.mime};base64,${a.bytes.toString('base64')}`) } : message;
  });
}
