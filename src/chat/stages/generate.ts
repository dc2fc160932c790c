import { type Engine, type EngineMessage, type GenerationEvent, spentOf } from '../../engines/engine.ts';
import { tapEvents } from '../../engines/tap-events.ts';
import type { Meter } from '../meter.ts';
import type { Stage } from '../pipeline.ts';
import type { RequestContext } from '../request-context.ts';

/** The model answers: the engine's event stream, as it comes. */
export function generate(engine: Engine): Stage {
  return async function generate(ctx) {
    const messages = engine.readsImages ? await withImages(ctx) : ctx.generation.messages;
    const events = engine.generate({ ...ctx.generation, messages, signal: ctx.signal });
    return { events: ctx.meter ? metered(events, messages, ctx.meter) : events, precontext: [] };
  };
}

/**
 * Records on the meter what the model was given and what it said, as it says it: an answer the
 * output guard stops, or a caller leaves, is billed for what was generated, and an engine that
 * reports no usage is billed from a count of its text.
 */
function metered(events: AsyncIterable<GenerationEvent>, messages: EngineMessage[], meter: Meter): AsyncIterableIterator<GenerationEvent> {
  const generation: NonNullable<Meter['generation']> = { prompt: messages.map((m) => m.content).join('\n'), started: false, text: '' };
  meter.generation = generation;
  return tapEvents(events, {
    event(event) {
      generation.started = true;
      if (event.type === 'done') generation.usage = event.usage;
      else generation.text += event.type === 'tool_call' ? (event.name ?? '') + event.arguments : event.text;
    },
    failed(err) {
      const spent = spentOf(err); // failed after generating (its output check): those tokens are paid
      if (spent) Object.assign(generation, { started: true, usage: spent });
      return err;
    },
  });
}

/**
 * Each message's images, as data URLs of the bytes already fetched and checked, so a model that
 * sees pictures gets them and never fetches a caller's URL itself.
 */
async function withImages(ctx: RequestContext): Promise<EngineMessage[]> {
  const images = (await ctx.attachments()).filter((a) => a.kind === 'image');
  if (images.length === 0) return ctx.generation.messages;
  return ctx.generation.messages.map((message) => {
    const own = message.at === undefined ? [] : images.filter((a) => a.param.startsWith(`messages[${message.at}].`));
    return own.length ? { ...message, images: own.map((a) => `data:${a.mime};base64,${a.bytes.toString('base64')}`) } : message;
  });
}
